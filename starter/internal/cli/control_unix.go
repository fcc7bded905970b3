//go:build !windows

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// stopHow and killHow name, for the messages, what stop and its --kill do
// on this system.
const (
	stopHow = "SIGTERM"
	killHow = "SIGKILL"
)

// requestStop asks the agent to stop gracefully. A process already gone
// is not an error: the caller waits on the pid file's lock anyway.
func requestStop(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", pid, err)
	}
	return nil
}

// killAgent ends the agent without a graceful stop.
func killAgent(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill pid %d: %w", pid, err)
	}
	return nil
}

// requestReload asks the agent to re-read its config; gone reports that
// no process has that pid any more.
func requestReload(pid int) (gone bool, err error) {
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return true, nil
		}
		return false, fmt.Errorf("signal pid %d: %w", pid, err)
	}
	return false, nil
}

// reloadHow is what the reload message says was sent.
func reloadHow(pid int) string { return fmt.Sprintf("SIGHUP to pid %d", pid) }

// detach makes cmd a session of its own, so that the terminal closing
// does not reach it, and hands it the readiness pipe's write end as fd 3.
// It returns the descriptor number the child is told.
func detach(cmd *exec.Cmd, w *os.File) (int, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.ExtraFiles = []*os.File{w}
	return 3, nil
}
