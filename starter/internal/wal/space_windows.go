package wal

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Without fallocate there is no reserve: the WAL appends until the disk
// refuses, as bbolt alone does.
func allocate(*os.File, int64, int64) error { return errors.ErrUnsupported }

// IsNoSpace says whether err is a full volume or an exhausted quota,
// including the WAL's own refusal to append (ErrNoSpace). Windows reports
// these as its own error numbers, not ENOSPC; bbolt formats the cause into
// its text, so the text is matched too (see space_linux.go).
func IsNoSpace(err error) bool {
	if err == nil {
		return false
	}
	full := []error{windows.ERROR_DISK_FULL, windows.ERROR_HANDLE_DISK_FULL, windows.ERROR_DISK_QUOTA_EXCEEDED}
	for _, e := range full {
		if errors.Is(err, e) {
			return true
		}
	}
	if errors.Is(err, ErrNoSpace) {
		return true
	}
	s := err.Error()
	for _, e := range full {
		if containsAny(s, e.Error()) {
			return true
		}
	}
	return false
}
