package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/self"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/clockjump"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

// msgFailed starts the line operators and the Java agent's launcher
// scripts grep for when a start fails.
const msgFailed = "BOOTSTRAP_FAILED edge-agent startup failed: "

// ErrRestart ends Run when the OpAMP server asked for a restart: every
// file is closed and the pid file released; the caller starts the same
// command again (in place, same pid).
var ErrRestart = errors.New("restart requested by the OpAMP server")

// Failure is how Run ends when the agent did not start or stopped on an
// error. It has been reported already (log, stderr, Options.OnFailure):
// the caller only exits with Code.
type Failure struct {
	Code int
	Err  error
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// Build is what the binary says about itself (API, OpAMP description).
type Build struct {
	Version, Commit string
}

// Options are what the command line resolved, and the process's streams.
type Options struct {
	// Home is the install root every relative path resolves against.
	Home string
	// ConfigPath is the config the command line named; "" looks for
	// $EDGE_AGENT_CONFIG, then config/agent.yaml in Home.
	ConfigPath string
	// StdinInput adds an input reading standard input to the config
	// (config.LoadOptions.StdinInput), at start and at every reload.
	StdinInput bool
	// LogLevel overrides log.level, at every reload too; "" leaves it.
	LogLevel string
	// Detached: no terminal watches this agent (start --background, a
	// Windows service). Logs go to log.file only, and a failure is also
	// printed as one line through PrintError.
	Detached bool
	// Service: run by the Windows service manager, which stops it through
	// the context; SIGTERM and SIGINT are not caught.
	Service bool

	Getenv func(string) string
	// Stdout takes the console output's events and nothing else.
	Stdout, Stderr io.Writer
	// StderrFile is the real stderr when there is one; it decides
	// whether logs on stderr are coloured. Nil: not a terminal.
	StderrFile *os.File
	Build      Build
	// Exit ends the process at once (a second stop signal); nil: os.Exit.
	Exit func(code int)
	// PrintError prints one error line the way the command line does;
	// nil: the line as it is on Stderr.
	PrintError func(msg string)
	// OnReady is told once, when the agent is ready; OnFailure once, when
	// Run fails. Either may be nil.
	OnReady   func()
	OnFailure func(code int, err error)
}

// boot is one Run's start-up: what each step leaves for the next.
type boot struct {
	o        Options
	terminal bool
	// logger is nil until the config named the log file; failures before
	// go to stderr and to the default log file.
	logger *slog.Logger
	ready  atomic.Bool
	// ring keeps the recent log records for the diagnostics bundle.
	ring *logging.Ring
	// own ships the agent's own log records to the self input.
	own *self.Hub
	// memLimit is the soft memory limit the process set, 0 when the
	// environment decided (agent.Options.MemoryLimit).
	memLimit int64
}

// Run is the agent process: config, logger, pid file, identity, signals,
// the agent, its management and HTTP API. It returns nil after a clean
// stop (ctx done, SIGTERM, a stop request), ErrRestart, or a *Failure.
func Run(ctx context.Context, o Options) error {
	if o.Exit == nil {
		o.Exit = os.Exit
	}
	if o.PrintError == nil {
		o.PrintError = func(msg string) { fmt.Fprintln(o.Stderr, msg) }
	}
	b := &boot{o: o, terminal: logging.IsTerminal(o.StderrFile), ring: logging.NewRing(0), own: self.NewHub()}
	// Until the signal handler catches it, a SIGHUP (a reload sent too
	// early) must not kill the agent and leave its pid file behind.
	ignoreHangup()
	tuning := tuneProcess(o.Getenv)
	cfg, err := loadAtStart(o, b.own)
	if err != nil {
		return b.fail(exitcode.Config, err) // Load's errors name the file
	}
	tuning.memLimit = process.RaiseMemoryLimitForRelay(tuning.memLimit, hasRelayInput(cfg.cfg))
	b.memLimit = tuning.memLimit
	level := new(slog.LevelVar)
	closeLog, err := b.openLog(cfg.cfg, level)
	if err != nil {
		return b.fail(exitcode.Failure, err)
	}
	defer closeLog.Close()
	cfg.logNotes(b.logger, o.Home)
	tuning.log(b.logger, cfg.cfg.HTTP.Pprof, o.Getenv)

	pidLock, err := b.acquirePID()
	if err != nil {
		return err
	}
	defer func() {
		if err := pidLock.Release(); err != nil {
			b.logger.Warn("remove pid file", "error", err)
		}
	}()
	ids, err := b.resolveIDs(cfg.cfg)
	if err != nil {
		return err
	}
	ctl := newRunControl(ctx, o.Getenv("NOTIFY_SOCKET"))
	stopWatch := ctl.watch(b, func() { _ = pidLock.Release() })
	defer stopWatch()
	defer ctl.cancelRun() // before stopWatch: a reload under way ends
	rt, base, err := b.newAgent(cfg, ids, ctl)
	if err != nil {
		return b.fail(exitcode.For(err), err)
	}
	rl := b.newReloader(cfg, rt, base, level)
	return b.serve(ctl, rl, rt, ids, cfg)
}

// fail reports a failure to start (or a run that ended before it was
// ready) where an operator looks for it, and returns it as a *Failure.
func (b *boot) fail(code int, err error) error {
	if b.o.OnFailure != nil {
		b.o.OnFailure(code, err)
	}
	if b.logger == nil {
		b.bootstrapFailed(code, err)
		return &Failure{Code: code, Err: err}
	}
	b.logger.Error(msgFailed+err.Error(), "exit_code", code)
	if b.o.Detached {
		// The logger wrote the file only; edge-agent.out keeps the one
		// line a crash report would look for.
		b.o.PrintError(err.Error())
	}
	return &Failure{Code: code, Err: err}
}

// acquirePID takes the pid file: one agent per install root.
func (b *boot) acquirePID() (*process.PIDLock, error) {
	pidFile := paths.PIDFile(b.o.Getenv, b.o.Home)
	lock, err := process.AcquirePID(pidFile, os.Getpid())
	if err != nil {
		var re *process.RunningError
		if errors.As(err, &re) {
			return nil, b.fail(exitcode.InUse, fmt.Errorf("another edge-agent is using %s (pid %d, pid file %s)", b.o.Home, re.PID, re.Path))
		}
		return nil, b.fail(exitcode.Failure, err)
	}
	return lock, nil
}

// agentIDs are the ids the agent runs under and the instance uid it
// reports to an OpAMP server.
type agentIDs struct {
	ids      identity.IDs
	explicit identity.IDs // what agent.yaml pins
	uid      identity.InstanceUID
	idFile   string
}

func (b *boot) resolveIDs(cfg *config.Config) (agentIDs, error) {
	a := agentIDs{
		explicit: identity.IDs{Agent: cfg.Agent.ID, Input: cfg.PinnedInputID(), Output: cfg.Output.ID},
		idFile:   paths.IDFile(b.o.Getenv, b.o.Home),
	}
	var err error
	if a.ids, err = identity.Resolve(a.idFile, a.explicit); err != nil {
		return a, b.fail(exitcode.Failure, fmt.Errorf("agent identity: %w", err))
	}
	if a.uid, err = identity.LoadInstanceUID(paths.InstanceUIDFile(b.o.Getenv, b.o.Home)); err != nil {
		return a, b.fail(exitcode.Failure, err)
	}
	return a, nil
}

// newAgent builds the agent from the config in force, and returns the
// options it got. When it is ready systemd, Options.OnReady and the id
// file hear of it.
func (b *boot) newAgent(cfg *startConfig, ids agentIDs, ctl *runControl) (*agent.Agent, agent.Options, error) {
	var readyOnce sync.Once
	var rt *agent.Agent
	opts := cfg.cfg.AgentOptions()
	opts.Inputs, opts.Outputs = cfg.load.Registry, cfg.load.Outputs
	opts.Home = b.o.Home
	opts.IDs = agent.IDs{Agent: ids.ids.Agent, Input: ids.ids.Input, Output: ids.ids.Output}
	opts.Logger = b.logger
	opts.ConfigHash = cfg.cfg.Hash
	opts.MemoryLimit = b.memLimit
	if file := b.o.Getenv(clockjump.EnvTestClock); file != "" {
		c := clockjump.Shifted(clockjump.System(), file)
		opts.Clock, opts.Now = c, c.Wall
		b.logger.Warn("test clock in use: the wall and boot clocks are moved by the milliseconds in the file "+clockjump.EnvTestClock+
			" names; unset it outside tests", "file", file)
	}
	opts.OnReady = func() {
		readyOnce.Do(func() {
			b.ready.Store(true)
			ctl.notifyReady(b.logger)
			if b.o.OnReady != nil {
				b.o.OnReady()
			}
			recordSettledInputID(rt, ids, b.logger)
		})
	}
	var err error
	rt, err = agent.New(opts)
	return rt, opts, err
}

// serve starts management and the HTTP API around the agent, runs it until
// it stops, and turns how it stopped into Run's result.
func (b *boot) serve(ctl *runControl, rl *reloader, rt *agent.Agent, ids agentIDs, cfg *startConfig) error {
	// mgmt is set before the bundle can be asked for (API and OpAMP both
	// start after it).
	var mgmt *managed
	d := &diagnostics{rl: rl, rt: rt, ring: b.ring, build: b.o.Build, now: time.Now,
		mgmt: func() *api.Management { return mgmt.status() }}
	mgmt, err := startManagement(ctl.ctx, managementOptions{
		reloader: rl, agent: rt, ids: ids, remote: cfg.remote, home: b.o.Home,
		getenv: b.o.Getenv, version: b.o.Build.Version, logger: b.logger, restart: ctl.restartFunc(),
		configPath: cfg.local.Path, own: b.own,
		tasks: &tasks{rt: rt, diag: d, hasWAL: cfg.cfg.Agent.Delivery != agent.DeliveryNon, now: time.Now},
	})
	if err != nil {
		return b.fail(exitcode.Failure, err)
	}
	pidFile := paths.PIDFile(b.o.Getenv, b.o.Home)
	stopAPI, err := startAPI(cfg.cfg, rt, b.logger, b.o.Build, mgmt.status, d.Bundle,
		paths.APIAddrFile(pidFile), paths.APITokenFile(pidFile))
	if err != nil {
		mgmt.close()
		return b.fail(exitcode.Failure, err)
	}
	ctl.reloads.Store(rl)
	watchTrial(ctl.ctx, b.o.Getenv, b.o.Home, rt, b.logger, ctl.restartFunc())
	runErr := rt.Run(ctl.ctx)
	// After Run: /readyz and /healthz answer 503 while the agent stops,
	// which is what a load balancer or a probe should see.
	stopAPI()
	mgmt.close()
	return b.outcome(ctl, runErr)
}

// outcome is Run's result for how the agent stopped.
func (b *boot) outcome(ctl *runControl, runErr error) error {
	code := exitcode.For(runErr)
	if code == exitcode.OK && ctl.restartRequested.Load() {
		b.logger.Info("restarting: the same binary and arguments start again")
		return ErrRestart
	}
	ctl.notifyStopping() // also when a fatal error, not a signal, ended the run
	if code == exitcode.OK {
		return nil // the agent logged the stop
	}
	if !b.ready.Load() {
		return b.fail(code, runErr)
	}
	b.logger.Error("edge-agent stopped on error: "+runErr.Error(), "exit_code", code)
	if b.o.Detached {
		b.o.PrintError(runErr.Error())
	}
	return &Failure{Code: code, Err: runErr}
}

// recordSettledInputID writes the input id the agent settled with the WAL
// back into the id file (agent.Settlement.Record). The WAL remembers the
// id its positions are keyed by; when the id file was lost,
// identity.Resolve made a fresh one, and the agent kept the WAL's.
func recordSettledInputID(rt *agent.Agent, ids agentIDs, logger *slog.Logger) {
	settled := rt.RecordedInputID()
	if settled == "" || settled == ids.ids.Input {
		return
	}
	fixed := identity.IDs{Agent: ids.ids.Agent, Input: settled, Output: ids.ids.Output}
	if _, err := identity.Resolve(ids.idFile, fixed); err != nil {
		logger.Warn("could not record the WAL's input id in the id file", "error", err)
	}
}
