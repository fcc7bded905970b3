//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package wal

import "time"

// lockForCheck: bbolt's lock here is not flock, so the check before the
// open runs unlocked; another process's lock makes bbolt's open fail with
// ErrLocked right after.
func lockForCheck(string, time.Duration) (func(), error) { return func() {}, nil }
