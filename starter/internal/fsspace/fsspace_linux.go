//go:build linux

package fsspace

import (
	"path/filepath"
	"syscall"
)

// Of returns the space of the filesystem holding path, or of path's
// folder when path does not exist yet; ok=false when it cannot be told.
func Of(path string) (Space, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
			return Space{}, false
		}
	}
	// Bsize is int32 on 32-bit platforms and uint32 on s390x: widen it.
	bsize := int64(st.Bsize)
	return Space{Avail: int64(st.Bavail) * bsize, Size: int64(st.Blocks) * bsize}, true
}
