package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
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

// eventName is the name of the agent's event for action. Global names are
// seen across sessions (a service runs in session 0, an operator's shell
// in another); creating one needs a privilege an unelevated agent may
// lack, so the agent falls back to its session's namespace and the
// commands look in both.
func eventName(namespace string, pid int, action string) string {
	return fmt.Sprintf(`%s\edge-agent-%d-%s`, namespace, pid, action)
}

var eventNamespaces = []string{"Global", "Local"}

// setEvent sets the agent's event for action; gone reports that no such
// event exists, that is, no agent with that pid listens.
func setEvent(pid int, action string) (gone bool, err error) {
	for _, ns := range eventNamespaces {
		name, err := windows.UTF16PtrFromString(eventName(ns, pid, action))
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

// watchControl creates this process's stop and reload events and calls
// stop or reload when another process sets them. Without the events the
// agent still runs (Ctrl-C and the service manager stop it), so a failure
// is logged, not fatal.
func watchControl(logger *slog.Logger, stop func(), reload func()) (closeFn func()) {
	pid := os.Getpid()
	stopEv, err := createEvent(pid, "stop")
	if err != nil {
		logger.Warn("edge-agent stop cannot reach this agent", "error", err)
		return func() {}
	}
	reloadEv, err := createEvent(pid, "reload")
	if err != nil {
		_ = windows.CloseHandle(stopEv)
		logger.Warn("edge-agent stop cannot reach this agent", "error", err)
		return func() {}
	}
	// quit wakes the waiting goroutine when the agent is done with it.
	quit, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		_ = windows.CloseHandle(stopEv)
		_ = windows.CloseHandle(reloadEv)
		logger.Warn("edge-agent stop cannot reach this agent", "error", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		handles := []windows.Handle{quit, stopEv, reloadEv}
		for {
			ev, err := windows.WaitForMultipleObjects(handles, false, windows.INFINITE)
			if err != nil {
				logger.Warn("waiting for stop and reload requests failed", "error", err)
				return
			}
			switch ev - windows.WAIT_OBJECT_0 {
			case 0:
				return
			case 1:
				logger.Info("stop requested")
				stop()
			case 2:
				logger.Info("reload requested; reloading the config")
				reload()
			}
		}
	}()
	return func() {
		_ = windows.SetEvent(quit)
		<-done
		for _, h := range []windows.Handle{quit, stopEv, reloadEv} {
			_ = windows.CloseHandle(h)
		}
	}
}

// createEvent creates the auto-reset event for action, in the global
// namespace when this process may, else in its session's.
func createEvent(pid int, action string) (windows.Handle, error) {
	var lastErr error
	for _, ns := range eventNamespaces {
		name, err := windows.UTF16PtrFromString(eventName(ns, pid, action))
		if err != nil {
			return 0, fmt.Errorf("event name: %w", err)
		}
		h, err := windows.CreateEvent(nil, 0, 0, name)
		if err == nil || errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
			// Existing: left by a process that had this pid and whose
			// handle some other process still holds; it works the same.
			return h, nil
		}
		lastErr = err
	}
	return 0, fmt.Errorf("create %s event: %w", action, lastErr)
}
