package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

// Log lines operators and the launcher scripts of the Java agent grep for.
const (
	msgReady  = "BOOTSTRAP_READY edge-agent started"
	msgFailed = "BOOTSTRAP_FAILED edge-agent startup failed: "
)

// notifyFDFlag is the hidden flag through which `start --background` hands
// its detached child the write end of the readiness pipe.
const notifyFDFlag = "notify-fd"

func (a *agentCLI) startCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "start",
		Usage:     "run the agent (foreground unless --background)",
		UsageText: "edge-agent start [--config FILE | FILE] [--background] [--log-level LEVEL]",
		Description: `Runs the agent until SIGTERM or SIGINT, then stops gracefully: input stops,
events held in memory are flushed to the WAL, the engine's replies to the
batches already sent are awaited (for at most half of what is left of
agent.shutdown-timeout-ms, so they are not sent again), the WAL is closed. A
second signal forces an immediate exit (nothing stored is lost; unsent or
unanswered rows are sent after the next start). SIGHUP re-reads and applies the config without a
restart (see edge-agent reload --help); it never stops the agent.

The config is, in order: --config or the positional FILE, $EDGE_AGENT_CONFIG,
$EDGE_AGENT_HOME/config/agent.yaml. The pid file ($EDGE_AGENT_PID_FILE,
default edge-agent.pid in the install root) is written at start and removed
at exit. With --background the agent detaches (output to edge-agent.out or
$EDGE_AGENT_LOG_FILE) and this command waits up to
$EDGE_AGENT_STARTUP_READY_TIMEOUT_S seconds (default 10) for readiness.
Under systemd Type=notify, READY=1 and STOPPING=1 are sent to $NOTIFY_SOCKET.
` + fmt.Sprintf(`The Go garbage collector runs at GOGC=%d unless $GOGC is set, with a soft
memory limit of %d MiB unless $GOMEMLIMIT is set.
`, process.DefaultGCPercent, process.DefaultMemoryLimit>>20) + `While it runs, the agent serves /metrics, /healthz, /readyz and /debug/status
on http.listen (default 127.0.0.1:9466; off disables; docs/metrics.md); a port
that cannot be bound fails the start (exit 1).

With management.opamp.endpoint set, the agent registers with that OpAMP
server (never waiting for it: a server that is down is retried with backoff
while the agent ships), reports its description, health and effective
config (secrets redacted), and applies an agent.yaml the server sends like a
reload (checked as by config check; reported APPLIED or FAILED). The last
one applied is kept in edge-agent.remote-config.json next to edge-agent.id
and used at the next start, over the file but for its management section
and queue.path; the log line "config in effect" says which (local or
remote, with its hash). The OpAMP restart command stops the agent
gracefully (as SIGTERM) and executes the same command again, same pid; not
on Windows, where the capability is not offered. The instance uid
(edge-agent.instance-uid, a UUIDv7) is created at the first start.

With output.type console the agent writes each event as one line of JSON on
stdout (NDJSON, terminal or not) and nothing else goes there, so it pipes
into jq. If the reader goes away the agent keeps running: the rows stay in
the WAL and are written again once stdout takes them.

Logs: in the foreground every record goes to stderr (coloured text on a
terminal, JSON lines otherwise: journald, containers, pipes) and to log.file
(default log/edge-agent.log, rotated). With --background they go to log.file
only; edge-agent.out keeps what the Go runtime prints on a crash.

Exit codes: 0 clean stop, 1 failure (worth a restart), 4 AUTH_FAILED (fix
output.token), 5 DECRYPT_FAILED (fix the AES key), both only with
output.on-refusal: exit (by default the agent keeps reading and retries),
6 another agent holds the data dir, 64 bad flags or arguments, 65 damaged
WAL (run the db salvage command the message gives), 78 missing or invalid
config. A crash exits 2
(the Go runtime's code), which no decision of the agent's uses.

Examples:
   edge-agent start
   edge-agent start --config /etc/edge-agent/agent.yaml --log-level debug
   edge-agent start config/agent.yaml
   edge-agent start --config console.yaml | jq .payload
   edge-agent start --background && edge-agent status`,
		Flags: []ucli.Flag{
			configFlag(),
			&ucli.BoolFlag{Name: "background", Aliases: []string{"d"}, Usage: "detach, wait for readiness, then return"},
			&ucli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (overrides log.level)"},
			&ucli.IntFlag{Name: notifyFDFlag, Hidden: true, Usage: "internal: readiness pipe of start --background"},
		},
		OnUsageError: usageError,
		Action:       a.start,
	}
}

// configFlag is the --config flag of every command that reads agent.yaml,
// so that one spelling works everywhere.
func configFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "agent.yaml to load", TakesFile: true}
}

// explicitConfig returns the config path the command line names, by
// --config or as the one positional argument ("" when neither). Naming it
// twice is a usage error rather than a silent choice between the two.
func explicitConfig(c *ucli.Context) (string, error) {
	given := c.Args().Slice()
	if f := c.String("config"); f != "" {
		given = append([]string{f}, given...)
	}
	if len(given) > 1 {
		return "", withCode(exitcode.Usage, fmt.Errorf("%s takes one config path (--config FILE or FILE), got %q", commandPath(c), given))
	}
	if len(given) == 1 {
		return given[0], nil
	}
	return "", nil
}

// startRequest is what start resolved from its flags.
type startRequest struct {
	home     string
	explicit string // --config or positional, as given
	logLevel string
	notify   *readyPipe // nil unless run by start --background
	service  bool       // run by the Windows service manager
	onReady  func()     // nil, or told once when the agent is ready
}

// detached is true in the agent that start --background started, and in
// a Windows service: it logs to the file only, its stderr being
// edge-agent.out.
func (r startRequest) detached() bool { return r.notify != nil || r.service }

func (a *agentCLI) start(c *ucli.Context) error {
	explicit, err := explicitConfig(c)
	if err != nil {
		return err
	}
	req := startRequest{explicit: explicit, logLevel: c.String("log-level")}
	if req.logLevel != "" {
		if _, err := logging.ParseLevel(req.logLevel); err != nil {
			return withCode(exitcode.Usage, fmt.Errorf("--log-level: %w", err))
		}
	}
	if fd := c.Int(notifyFDFlag); fd > 0 {
		req.notify = openReadyPipe(fd)
	}
	req.home = a.home()
	if c.Bool("background") {
		return a.startBackground(c.Context, req)
	}
	err = a.runForeground(c.Context, req)
	if errors.Is(err, errRestart) {
		// Every file is closed and the pid file released: start afresh.
		return a.reexec()
	}
	return err
}

// runForeground is the agent process itself: config, logger, pid file,
// identity, runtime, signals.
func (a *agentCLI) runForeground(ctx context.Context, req startRequest) error {
	// Until handleSignals catches it, a SIGHUP (a reload sent too early)
	// must not kill the agent and leave its pid file behind.
	signal.Ignore(syscall.SIGHUP)
	// Before anything opens a file: the input sizes max-open-files from
	// the limit in force when it is created.
	fdSoft, fdHard, fdErr := process.RaiseOpenFilesLimit()
	// Before the agent allocates much: its GC percentage and soft memory
	// limit, unless the environment sets GOGC or GOMEMLIMIT.
	gc := process.TuneGC(a.env.Getenv)
	memLimit := process.TuneMemoryLimit(a.env.Getenv)
	terminal := logging.IsTerminal(a.env.StderrFile)
	// Until the config names the log file, logger is nil and failures go
	// to stderr and to the default log file.
	var logger *slog.Logger
	var ready atomic.Bool
	fail := func(code int, err error) error {
		req.notify.failed(code, err)
		if logger == nil {
			a.bootstrapFailed(req, terminal, code, err)
			return quietCode(code)
		}
		logger.Error(msgFailed+err.Error(), "exit_code", code)
		if req.detached() {
			// The logger wrote the file only; edge-agent.out keeps the
			// one line a crash report would look for.
			a.errorf("%v", err)
		}
		return quietCode(code)
	}

	// output.type console writes events to stdout; logs never go there.
	registry, outputs := registries(a.env.Stdout)
	// A reload loads the file again exactly so.
	loadOpts := a.loadOptions(req.home, registry, outputs)
	local, warnings, cfgPath, err := a.readConfig(req.explicit, req.home, registry, outputs)
	if err != nil {
		return fail(exitcode.Config, err) // Load's errors name the file
	}
	// The fleet's config, when one was applied before, wins over the
	// file but for management and queue.path.
	cfg, remote, remoteWarnings, remoteNotes := a.remoteAtStart(local, req.home, loadOpts)
	warnings = append(warnings, remoteWarnings...)

	level := new(slog.LevelVar)
	fileLogger, closeLog, err := a.openLog(cfg, req, terminal, level)
	if err != nil {
		return fail(exitcode.Failure, err)
	}
	defer closeLog.Close()
	logger = fileLogger
	logger.Debug("config loaded", "config_path", cfgPath, "install_root", req.home)
	for _, w := range warnings {
		logger.Warn("config warning: " + w.String())
	}
	for _, note := range remoteNotes {
		note(logger)
	}
	logger.Info("config in effect", "config_source", cfg.Origin(), "config_hash", cfg.Hash, "config_path", cfgPath)
	if fdErr != nil {
		logger.Warn("open-files limit left as it was", "error", fdErr, "soft", fdSoft, "hard", fdHard)
	} else if fdSoft > 0 {
		logger.Debug("open-files limit", "soft", fdSoft, "hard", fdHard)
	}
	if gc != 0 {
		logger.Debug("garbage collector percentage set (GOGC in the environment overrides it)", "gc_percent", gc)
	} else {
		logger.Debug("garbage collector percentage left to GOGC")
	}
	if memLimit != 0 {
		logger.Debug("soft memory limit set (GOMEMLIMIT in the environment overrides it)", "memory_limit_bytes", memLimit)
	} else {
		logger.Debug("soft memory limit left to GOMEMLIMIT")
	}
	if !process.TuneHeapSampling(cfg.HTTP.Pprof, a.env.Getenv) {
		logger.Debug("heap profile sampling off (http.pprof is off, and GODEBUG sets no memprofilerate)")
	}

	pidFile := paths.PIDFile(a.env.Getenv, req.home)
	pid := os.Getpid()
	pidLock, err := process.AcquirePID(pidFile, pid)
	if err != nil {
		var re *process.RunningError
		if errors.As(err, &re) {
			return fail(exitcode.InUse, fmt.Errorf("another edge-agent is using %s (pid %d, pid file %s)", req.home, re.PID, re.Path))
		}
		return fail(exitcode.Failure, err)
	}
	defer func() {
		if err := pidLock.Release(); err != nil {
			logger.Warn("remove pid file", "error", err)
		}
	}()

	explicit := explicitIDs(cfg)
	ids, err := identity.Resolve(paths.IDFile(a.env.Getenv, req.home), explicit)
	if err != nil {
		return fail(exitcode.Failure, fmt.Errorf("agent identity: %w", err))
	}
	uid, err := identity.LoadInstanceUID(paths.InstanceUIDFile(a.env.Getenv, req.home))
	if err != nil {
		return fail(exitcode.Failure, err)
	}

	notifySocket := a.env.Getenv("NOTIFY_SOCKET")
	var stoppingOnce sync.Once
	notifyStopping := func() {
		stoppingOnce.Do(func() { _ = process.Notify(notifySocket, "STOPPING=1") })
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	cancel := func() {
		notifyStopping()
		cancelRun()
	}
	var reloads atomic.Pointer[reloader]
	onHangup := func() {
		rl := reloads.Load()
		if rl == nil {
			logger.Warn("SIGHUP before the agent was set up; nothing reloaded, send it again once started")
			return
		}
		rl.reload(runCtx)
	}
	// A Windows service is stopped by its manager (superviseAgent) and
	// must not catch SIGTERM: Go raises it for the console events Windows
	// sends a service whenever any user logs off.
	if !req.service {
		stopSignals := a.handleSignals(logger, cancel, onHangup, func() { _ = pidLock.Release() })
		defer stopSignals()
	}
	// Where stop and reload are not signals (Windows), they arrive here.
	stopControl := watchControl(logger, cancel, onHangup)
	defer stopControl()
	defer survivePipeClose()()

	var readyOnce sync.Once
	var rt *agent.Agent
	opts := cfg.AgentOptions()
	opts.Inputs, opts.Outputs = registry, outputs
	opts.Home = req.home
	opts.IDs = agent.IDs{
		Agent: ids.Agent, Input: ids.Input, Output: ids.Output,
		InputExplicit: explicit.Input != "",
	}
	opts.Logger = logger
	opts.ConfigHash = cfg.Hash
	opts.OnReady = func() {
		readyOnce.Do(func() {
			ready.Store(true)
			if err := process.Notify(notifySocket, "READY=1"); err != nil {
				logger.Warn("systemd readiness notification failed", "error", err)
			}
			req.notify.ready()
			if req.onReady != nil {
				req.onReady()
			}
			if len(cfg.Inputs) == 0 {
				// inputs: entries carry their own ids; the id file's is
				// the single input's only.
				recordSettledInputID(rt, ids, paths.IDFile(a.env.Getenv, req.home), logger)
			}
		})
	}
	rt, err = agent.New(opts)
	if err != nil {
		return fail(exitcode.For(err), err)
	}
	rl := &reloader{path: cfgPath, load: loadOpts, logLevel: req.logLevel, level: level,
		logger: logger, rt: rt, base: opts, local: local, cur: cfg}
	if remote != nil {
		rl.remote = remote.YAML
	}
	// A restart the OpAMP server asks for is a graceful stop (as SIGTERM:
	// every buffered event goes to the WAL), then exec of the same command.
	var restartRequested atomic.Bool
	var restart func()
	if canRestart {
		restart = func() {
			restartRequested.Store(true)
			cancelRun()
		}
	}
	mgmt, err := a.startManagement(runCtx, rl, rt, uid, ids, remote, req.home, logger, restart)
	if err != nil {
		return fail(exitcode.Failure, err)
	}
	stopAPI, err := a.startAPI(cfg, rt, logger, mgmt.status)
	if err != nil {
		mgmt.close()
		return fail(exitcode.Failure, err)
	}
	reloads.Store(rl)
	runErr := rt.Run(runCtx)
	// After Run: /readyz and /healthz answer 503 while the agent stops,
	// which is what a load balancer or a probe should see.
	stopAPI()
	mgmt.close()
	code := exitcode.For(runErr)
	if code == exitcode.OK && restartRequested.Load() {
		logger.Info("restarting: the same binary and arguments start again")
		return errRestart
	}
	notifyStopping() // also when a fatal error, not a signal, ended the run
	if code == exitcode.OK {
		return nil // the runtime logged the stop
	}
	if !ready.Load() {
		return fail(code, runErr)
	}
	logger.Error("edge-agent stopped on error: "+runErr.Error(), "exit_code", code)
	if req.detached() {
		a.errorf("%v", runErr)
	}
	return quietCode(code)
}

// startAPI serves http.* (nothing when http.listen is off); the returned
// function stops it.
func (a *agentCLI) startAPI(cfg *config.Config, rt *agent.Agent, logger *slog.Logger, mgmt func() *api.Management) (stop func(), err error) {
	if !cfg.HTTP.Enabled() {
		return func() {}, nil
	}
	srv, err := api.Start(api.Options{
		Settings: cfg.HTTP, Source: rt, DB: rt, Logger: logger,
		Version: a.env.Build.Version, Commit: a.env.Build.Commit, ConfigHash: cfg.Hash,
		Management: mgmt,
	})
	if err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			logger.Warn("HTTP API did not stop cleanly", "error", err)
		}
	}, nil
}

// handleSignals cancels the run on the first SIGTERM/SIGINT and exits at
// once on the second: an operator who presses Ctrl-C twice means it, and
// the WAL makes an abrupt exit safe. SIGHUP calls reload, one at a time, on
// a goroutine of its own: it never stops the agent (its default action
// would, leaving the pid file behind), and a slow reload never holds up a
// SIGTERM.
func (a *agentCLI) handleSignals(logger *slog.Logger, cancel func(), reload func(), beforeExit func()) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	// One pending SIGHUP is enough: a reload reads the file as it is then.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				logger.Info("SIGHUP received; reloading the config")
				reload()
			case <-done:
				return
			}
		}
	}()
	go func() {
		select {
		case s := <-ch:
			// The runtime logs the documented shutdown line itself.
			logger.Debug("signal received", "signal", s.String())
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-ch:
			logger.Warn("second signal: exiting without a graceful stop", "signal", s.String())
			beforeExit()
			a.env.Exit(exitcode.Failure)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		// SIGHUP stays caught until the process exits: a late one must
		// not kill an agent that is flushing its WAL.
		close(done)
	}
}

// explicitIDs are the ids agent.yaml pins; identity.Resolve fills the rest
// from (or into) edge-agent.id.
func explicitIDs(cfg *config.Config) identity.IDs {
	return identity.IDs{Agent: cfg.Agent.ID, Input: cfg.InputID, Output: cfg.Output.ID}
}

// recordSettledInputID writes the WAL's input id back into the id file. The
// WAL remembers the id its positions are keyed by; when the id file was
// lost, identity.Resolve made a fresh one, and the runtime kept the WAL's.
func recordSettledInputID(rt *agent.Agent, ids identity.IDs, idFile string, logger *slog.Logger) {
	settled := rt.Snapshot().InputID
	if settled == "" || settled == ids.Input {
		return
	}
	fixed := identity.IDs{Agent: ids.Agent, Input: settled, Output: ids.Output}
	if _, err := identity.Resolve(idFile, fixed); err != nil {
		logger.Warn("could not record the WAL's input id in the id file", "error", err)
	}
}
