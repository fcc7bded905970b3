//go:build unix

package cli

import (
	"fmt"
	"syscall"
)

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
