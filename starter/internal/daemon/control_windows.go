package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"golang.org/x/sys/windows"
)

// Windows has no SIGTERM or SIGHUP to send to another process (console
// control events reach only processes sharing a console, which a detached
// agent or a service does not). The agent therefore creates two named
// events keyed by its pid, "stop" and "reload"; the stop and reload
// commands set them.

// EventNames are the names the agent's event for action may have, in the
// order to try. Global names are seen across sessions (a service runs in
// session 0, an operator's shell in another); creating one needs a
// privilege an unelevated agent may lack, so the agent falls back to its
// session's namespace and the commands look in both.
func EventNames(pid int, action string) []string {
	return []string{
		fmt.Sprintf(`Global\edge-agent-%d-%s`, pid, action),
		fmt.Sprintf(`Local\edge-agent-%d-%s`, pid, action),
	}
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
	for _, n := range EventNames(pid, action) {
		name, err := windows.UTF16PtrFromString(n)
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
