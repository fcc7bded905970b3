//go:build unix

package file

import (
	"os"
	"syscall"
)

// idOf is the identity and link count of the file path names, from its
// stat fi.
func idOf(_ string, fi os.FileInfo) (fileID, uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, 0, false
	}
	return unixFileID(uint64(st.Dev), uint64(st.Ino)), uint64(st.Nlink), true
}

// idOfOpen is the identity and link count of the open file f, whose stat
// is fi: here the stat of a descriptor already says it.
func idOfOpen(_ *os.File, fi os.FileInfo) (fileID, uint64, bool) { return idOf("", fi) }

// openShared opens path for reading. Unix lets others rename and delete
// an open file, so a plain open never holds up rotation.
func openShared(path string) (*os.File, error) { return os.Open(path) }
