//go:build unix

package file

import "syscall"

// openFilesLimit is the process's soft RLIMIT_NOFILE; 0 when it cannot be
// read or is unlimited.
func openFilesLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	// Cur is int64 on some systems, where RLIM_INFINITY is -1.
	if cur := uint64(r.Cur); cur != ^uint64(0) {
		return cur
	}
	return 0
}
