package cli

import "syscall"

// trialProcAttr: a trial dies with its launcher (a kill -9 of it), so no
// orphan holds the WAL when the launcher starts again.
func trialProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
