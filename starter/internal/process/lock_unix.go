//go:build unix

package process

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes flock on f without waiting. flock belongs to the open
// file, not the process, so a second open in the same process conflicts
// too, and the kernel drops it when the last descriptor closes.
func tryLock(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errHeld
	}
	return err
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// openFile opens the pid file; unix lets the holder remove it whoever
// else has it open.
func openFile(path string, flag int) (*os.File, error) { return os.OpenFile(path, flag, 0o640) }
