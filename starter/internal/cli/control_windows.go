package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/edge-agent/edge-agent/starter/internal/daemon"
)

// Windows has no SIGTERM or SIGHUP to send to another process (console
// control events reach only processes sharing a console, which a detached
// agent or a service does not). The agent therefore creates two named
// events keyed by its pid; stop and reload set them. A service is stopped
// through the service manager instead (edge-agent service stop), which
// the service handler turns into the same graceful stop.
const (
	stopHow = "the agent's stop event"
	killHow = "TerminateProcess"
)

// setEvent sets the agent's event for action; gone reports that no such
// event exists, that is, no agent with that pid listens.
func setEvent(pid int, action string) (gone bool, err error) {
	for _, n := range daemon.EventNames(pid, action) {
		name, err := windows.UTF16PtrFromString(n)
		if err != nil {
			return false, fmt.Errorf("event name: %w", err)
		}
		h, err := windows.OpenEvent(windows.EVENT_MODIFY_STATE, false, name)
		if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("open %s event of pid %d: %w", action, pid, err)
		}
		err = windows.SetEvent(h)
		_ = windows.CloseHandle(h)
		if err != nil {
			return false, fmt.Errorf("set %s event of pid %d: %w", action, pid, err)
		}
		return false, nil
	}
	return true, nil
}

// requestStop sets the agent's stop event. An agent without one (gone
// already) is not an error: the caller waits on the pid file's lock.
func requestStop(pid int) error {
	_, err := setEvent(pid, "stop")
	return err
}

// killAgent ends the agent without a graceful stop.
func killAgent(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		// OpenProcess fails once the process has exited.
		return nil
	}
	defer p.Release()
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill pid %d: %w", pid, err)
	}
	return nil
}

func requestReload(pid int) (gone bool, err error) { return setEvent(pid, "reload") }

func reloadHow(pid int) string { return fmt.Sprintf("reload event of pid %d", pid) }

// detach starts cmd without a console and in a process group of its own,
// so that closing the operator's console or pressing Ctrl-C there does not
// reach it. Windows passes no descriptors beyond stdio, so the readiness
// pipe is inherited as a handle and the child is told its value.
func detach(cmd *exec.Cmd, w *os.File) (int, error) {
	h := windows.Handle(w.Fd())
	if err := windows.SetHandleInformation(h, windows.HANDLE_FLAG_INHERIT, windows.HANDLE_FLAG_INHERIT); err != nil {
		return 0, fmt.Errorf("readiness pipe: %w", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags:              windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS,
		AdditionalInheritedHandles: []syscall.Handle{syscall.Handle(h)},
	}
	return int(h), nil
}
