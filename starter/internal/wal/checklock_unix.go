//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package wal

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockForCheck takes the exclusive lock bbolt takes for a read-write open,
// so that the file is checked while no other process has it open, waiting
// up to timeout like bbolt does. The lock is released before bbolt takes
// its own (flock locks belong to one open file).
func lockForCheck(path string, timeout time.Duration) (release func(), err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || !time.Now().Before(deadline) {
			_ = f.Close()
			return nil, errLockBusy
		}
		time.Sleep(lockPollInterval)
	}
}

// lockPollInterval is how often lockForCheck retries, as bbolt's flock.
const lockPollInterval = 50 * time.Millisecond
