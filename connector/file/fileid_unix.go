//go:build unix

package file

import (
	"os"
	"syscall"
)

// fileID is what the operating system says a file is: device and inode.
type fileID struct{ dev, ino uint64 }

func idOf(path string, fi os.FileInfo) (fileID, uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, 0, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, uint64(st.Nlink), true
}
