package fsspace

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// Of returns the space of the volume holding path; ok=false when it
// cannot be told.
func Of(path string) (Space, bool) {
	dir, err := windows.UTF16PtrFromString(filepath.Dir(path))
	if err != nil {
		return Space{}, false
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(dir, &avail, &total, &free); err != nil {
		return Space{}, false
	}
	return Space{Avail: int64(min(avail, 1<<62)), Size: int64(min(total, 1<<62))}, true
}
