//go:build !linux && !windows

package wal

import (
	"errors"
	"os"
	"syscall"
)

// Without fallocate there is no reserve: the WAL appends until the disk
// refuses, as bbolt alone does.
func allocate(*os.File, int64, int64) error { return errors.ErrUnsupported }

// IsNoSpace says whether err is a full filesystem (see space_linux.go).
func IsNoSpace(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, ErrNoSpace) || errors.Is(err, syscall.ENOSPC) || containsAny(err.Error(), syscall.ENOSPC.Error())
}
