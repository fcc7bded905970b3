//go:build unix

package process

import (
	"fmt"
	"syscall"
)

// RaiseOpenFilesLimit raises the soft open-files limit (RLIMIT_NOFILE) to
// the hard limit and returns the limits in force afterwards. The agent
// holds a descriptor per file it follows (up to max-open-files) besides
// the WAL and its sockets; a soft limit below the hard one only makes it
// run out sooner (EMFILE). The Go runtime does the same at start-up on
// most systems; doing it here makes it independent of that and gives the
// caller the figures to log. An error leaves the limit as it was.
func RaiseOpenFilesLimit() (soft, hard uint64, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, fmt.Errorf("read the open-files limit: %w", err)
	}
	if r.Cur < r.Max {
		want := r
		want.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return uint64(r.Cur), uint64(r.Max), fmt.Errorf("raise the open-files limit from %d to %d: %w", r.Cur, r.Max, err)
		}
		r = want
	}
	return uint64(r.Cur), uint64(r.Max), nil
}
