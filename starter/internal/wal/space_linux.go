//go:build linux

package wal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// allocate makes the file's blocks in [off, off+n) real, extending the
// file when that ends past it, so later writes there cannot fail for want
// of disk space (a file grown by truncate, as bbolt grows it, is sparse).
func allocate(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Fallocate(int(fd), 0, off, n)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr != nil {
		return fmt.Errorf("fallocate: %w", ferr)
	}
	return nil
}

// IsNoSpace says whether err is a full filesystem or an exhausted quota,
// including the WAL's own refusal to append (ErrNoSpace). bbolt reports a
// failed file resize with the cause formatted into the text, not wrapped,
// so the text is matched too.
func IsNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNoSpace) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	s := err.Error()
	return containsAny(s, syscall.ENOSPC.Error(), syscall.EDQUOT.Error())
}
