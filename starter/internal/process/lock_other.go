//go:build !unix && !windows

package process

import (
	"errors"
	"fmt"
	"os"
)

// Liveness comes from a lock on the pid file; only unix systems have one
// here so far. Saying so beats guessing from a pid that may be reused.
func tryLock(*os.File, bool) error {
	return fmt.Errorf("pid file lock: %w", errors.ErrUnsupported)
}

func unlock(*os.File) error { return nil }

func openFile(path string, flag int) (*os.File, error) { return os.OpenFile(path, flag, 0o640) }
