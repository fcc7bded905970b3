package process

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the lock sits: far past any pid, because a Windows
// byte-range lock also bars other handles from reading the bytes it covers,
// and readers must still read the pid. Locking past the end of a file is
// allowed.
const lockOffset = 1 << 62

// tryLock takes a byte-range lock on f with LockFileEx without waiting.
// Like flock it belongs to the open handle, so a second open in the same
// process conflicts too, and Windows drops it when the handle closes or
// the process ends, however it ends.
func tryLock(f *os.File, exclusive bool) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := lockRange()
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return errHeld
	}
	return err
}

func unlock(f *os.File) error {
	ol := lockRange()
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

func lockRange() windows.Overlapped {
	return windows.Overlapped{Offset: uint32(lockOffset & 0xFFFFFFFF), OffsetHigh: uint32(lockOffset >> 32)}
}

// openFile opens the pid file sharing delete access: the agent removes
// its own pid file while holding it open (see Release), and a probe that
// has it open must not make that removal fail.
func openFile(path string, flag int) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	access := uint32(windows.GENERIC_READ)
	disposition := uint32(windows.OPEN_EXISTING)
	if flag&os.O_RDWR != 0 {
		access |= windows.GENERIC_WRITE
	}
	if flag&os.O_CREATE != 0 {
		disposition = windows.OPEN_ALWAYS
	}
	share := uint32(windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE)
	h, err := windows.CreateFile(p, access, share, nil, disposition, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}
