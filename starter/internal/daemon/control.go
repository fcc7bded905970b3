package daemon

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

// runControl is how a run is told to stop, reload or restart, whatever
// asked (a signal, a Windows event, the service manager through ctx, the
// OpAMP server), and how systemd hears of it.
type runControl struct {
	ctx       context.Context
	cancelRun context.CancelFunc
	// notifySocket is $NOTIFY_SOCKET: systemd Type=notify.
	notifySocket string
	stoppingOnce sync.Once
	// reloads is nil until the agent is set up: a reload before finds
	// nothing to reload.
	reloads          atomic.Pointer[reloader]
	restartRequested atomic.Bool
}

func newRunControl(parent context.Context, notifySocket string) *runControl {
	ctx, cancel := context.WithCancel(parent)
	return &runControl{ctx: ctx, cancelRun: cancel, notifySocket: notifySocket}
}

// stop is a graceful stop (SIGTERM, a stop request).
func (c *runControl) stop() {
	c.notifyStopping()
	c.cancelRun()
}

func (c *runControl) notifyStopping() {
	c.stoppingOnce.Do(func() { _ = process.Notify(c.notifySocket, "STOPPING=1") })
}

func (c *runControl) notifyReady(logger *slog.Logger) {
	if err := process.Notify(c.notifySocket, "READY=1"); err != nil {
		logger.Warn("systemd readiness notification failed", "error", err)
	}
}

// hangup reloads the config (SIGHUP, a reload request).
func (c *runControl) hangup(logger *slog.Logger) {
	rl := c.reloads.Load()
	if rl == nil {
		logger.Warn("SIGHUP before the agent was set up; nothing reloaded, send it again once started")
		return
	}
	rl.Reload(c.ctx)
}

// restartFunc is what the OpAMP restart command calls: a graceful stop (as
// SIGTERM: every buffered event goes to the WAL), after which Run returns
// ErrRestart. Nil where the process cannot restart in place.
func (c *runControl) restartFunc() func() {
	if !canRestart {
		return nil
	}
	return func() {
		c.restartRequested.Store(true)
		c.cancelRun()
	}
}

// watch starts taking stop and reload requests: signals (but for a
// Windows service, which its manager stops through ctx and which must not
// catch SIGTERM: Go raises it for the console events Windows sends a
// service whenever any user logs off), and where they are not signals,
// the system's own channel. beforeExit runs before a forced exit. The
// returned function stops it all.
func (c *runControl) watch(b *boot, beforeExit func()) (stop func()) {
	logger := b.logger
	onHangup := func() { c.hangup(logger) }
	stopSignals := func() {}
	if !b.o.Service {
		stopSignals = handleSignals(logger, c.stop, onHangup, beforeExit, b.o.Exit)
	}
	stopControl := watchControl(logger, c.stop, onHangup)
	stopPipe := survivePipeClose()
	return func() {
		stopPipe()
		stopControl()
		stopSignals()
	}
}

// ignoreHangup keeps a SIGHUP from killing the process until
// handleSignals catches it.
func ignoreHangup() { signal.Ignore(syscall.SIGHUP) }

// handleSignals cancels the run on the first SIGTERM/SIGINT and exits at
// once on the second: an operator who presses Ctrl-C twice means it, and
// the WAL makes an abrupt exit safe. SIGHUP calls reload, one at a time, on
// a goroutine of its own: it never stops the agent (its default action
// would, leaving the pid file behind), and a slow reload never holds up a
// SIGTERM.
func handleSignals(logger *slog.Logger, cancel, reload, beforeExit func(), exit func(int)) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	// One pending SIGHUP is enough: a reload reads the file as it is then.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-hup:
				logger.Info("SIGHUP received; reloading the config")
				reload()
			case <-done:
				return
			}
		}
	})
	wg.Go(func() {
		select {
		case s := <-ch:
			// The agent logs the documented shutdown line itself.
			logger.Debug("signal received", "signal", s.String())
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-ch:
			logger.Warn("second signal: exiting without a graceful stop", "signal", s.String())
			beforeExit()
			exit(exitcode.Failure)
		case <-done:
		}
	})
	return func() {
		signal.Stop(ch)
		// SIGHUP stays caught until the process exits: a late one must
		// not kill an agent that is flushing its WAL.
		close(done)
		wg.Wait()
	}
}

// survivePipeClose makes a write to stdout or stderr whose reader has gone
// (`edge-agent start | jq .` after jq exits) fail with EPIPE instead of
// killing the agent: Go lets SIGPIPE kill a process writing to fds 1 and 2
// unless the program asks for the signal. The console output then reports
// the failed write and keeps its rows in the WAL. Nothing reads the
// channel; the runtime drops signals a full channel cannot take.
func survivePipeClose() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	return func() { signal.Stop(ch) }
}
