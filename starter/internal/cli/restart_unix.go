//go:build unix

package cli

import (
	"fmt"
	"syscall"
)

// canRestart: on unix the agent restarts in place with exec (same pid, so
// the pid file, systemd and `edge-agent stop` keep tracking it).
const canRestart = true

// reexec replaces this process with a fresh run of the same binary and
// arguments; it returns only when exec failed.
func (a *agentCLI) reexec() error {
	exe, err := a.env.Executable()
	if err != nil {
		return fmt.Errorf("restart: find the binary: %w", err)
	}
	if err := syscall.Exec(exe, restartArgs(a.env.Args), a.env.Environ()); err != nil {
		return fmt.Errorf("restart: exec %s: %w", exe, err)
	}
	return nil
}
