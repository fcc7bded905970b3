package file

import (
	"os"

	"golang.org/x/sys/windows"
)

// shareAll lets other processes read, write, rename and delete a file
// while this one has it open: the application must be able to rotate the
// log it writes while the agent reads it.
const shareAll = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE

// idOf is the identity and link count of the file path names. Windows'
// stat carries no file index, so the file is opened (for no access, which
// conflicts with no one) and asked.
func idOf(path string, _ os.FileInfo) (fileID, uint64, bool) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return fileID{}, 0, false
	}
	// BACKUP_SEMANTICS is what CreateFile needs to open a directory too;
	// callers pass regular files, but a path replaced by a directory in
	// between must still answer rather than fail oddly.
	h, err := windows.CreateFile(p, 0, shareAll, nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return fileID{}, 0, false
	}
	defer windows.CloseHandle(h)
	return idOfHandle(h)
}

// idOfOpen is the identity and link count of the open file f: asked of
// its handle, so a name replaced since the open does not mislead.
func idOfOpen(f *os.File, _ os.FileInfo) (fileID, uint64, bool) {
	return idOfHandle(windows.Handle(f.Fd()))
}

func idOfHandle(h windows.Handle) (fileID, uint64, bool) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return fileID{}, 0, false
	}
	return windowsFileID(info.VolumeSerialNumber, info.FileIndexHigh, info.FileIndexLow), uint64(info.NumberOfLinks), true
}

// openShared opens path for reading without locking others out of it.
// os.Open does not share delete access, so while the agent held a log
// the application could neither rename it (rotation) nor delete it.
func openShared(path string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, shareAll, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		// The error is a syscall.Errno, which matches fs.ErrNotExist for
		// ERROR_FILE_NOT_FOUND and ERROR_PATH_NOT_FOUND as callers expect.
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}
