package cli

import (
	"context"
	"errors"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/daemon"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
	"github.com/edge-agent/edge-agent/starter/internal/process"
	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
)

// notifyFDFlag is the hidden flag through which `start --background` hands
// its detached child the write end of the readiness pipe.
const notifyFDFlag = "notify-fd"

func (a *agentCLI) startCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "start",
		Usage:       "run the agent (foreground unless --background)",
		UsageText:   "edge-agent start [--config FILE | FILE] [--background | --stdin] [--log-level LEVEL]",
		Description: startDescription(),
		Flags: []ucli.Flag{
			configFlag(),
			&ucli.BoolFlag{Name: "background", Aliases: []string{"d"}, Usage: "detach, wait for readiness, then return"},
			&ucli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (overrides log.level)"},
			&ucli.BoolFlag{Name: "stdin", Usage: "also read standard input, one event per line (adds a type: stdin input)"},
			&ucli.IntFlag{Name: notifyFDFlag, Hidden: true, Usage: "internal: readiness pipe of start --background"},
		},
		OnUsageError: usageError,
		Action:       a.start,
	}
}

// startDescription is start's --help text.
func startDescription() string {
	return `Runs the agent until SIGTERM or SIGINT, then stops gracefully: input stops,
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
memory limit of %d MiB (%d MiB with an edgesocket input: a relay) unless
$GOMEMLIMIT is set.
`, process.DefaultGCPercent, process.DefaultMemoryLimit>>20, process.RelayMemoryLimit>>20) + `While it runs, the agent serves /metrics, /healthz, /readyz and /debug/status
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

With --stdin the agent also reads its standard input, one event per line,
as an input of type stdin: the config's only input when it names none
(then no input section is needed), or an entry with id stdin added to its
inputs list (a config with a single input section is refused: make it an
inputs list). At the end of the pipe the agent keeps running; stop it as
usual. --stdin does not go with --background, which detaches from it.

Examples:
   edge-agent start
   tail -F app.log | edge-agent start --stdin
   edge-agent start --config /etc/edge-agent/agent.yaml --log-level debug
   edge-agent start config/agent.yaml
   edge-agent start --config console.yaml | jq .payload
   edge-agent start --background && edge-agent status`
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
	stdin    bool       // --stdin: add an input reading standard input
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
	req := startRequest{explicit: explicit, logLevel: c.String("log-level"), stdin: c.Bool("stdin")}
	if req.stdin && c.Bool("background") {
		return withCode(exitcode.Usage, errors.New("start: --stdin reads this terminal's standard input, which --background detaches from: use one of them"))
	}
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
	if handled, err := a.launch(c.Context, req); handled {
		return err
	}
	err = a.runDaemon(c.Context, req)
	if errors.Is(err, daemon.ErrRestart) {
		if upgrade.InTrial(a.env.Getenv) {
			// A trial ends here; its launcher execs what runs next.
			return nil
		}
		// Every file is closed and the pid file released: start afresh.
		return a.reexec()
	}
	return err
}

// runDaemon runs the agent in this process with what start resolved.
func (a *agentCLI) runDaemon(ctx context.Context, req startRequest) error {
	err := daemon.Run(ctx, daemon.Options{
		Home:       req.home,
		ConfigPath: req.explicit,
		StdinInput: req.stdin,
		LogLevel:   req.logLevel,
		Detached:   req.detached(),
		Service:    req.service,
		Getenv:     a.env.Getenv,
		Stdout:     a.env.Stdout,
		Stderr:     a.env.Stderr,
		StderrFile: a.env.StderrFile,
		Build:      daemon.Build{Version: a.env.Build.Version, Commit: a.env.Build.Commit},
		Exit:       a.env.Exit,
		PrintError: func(msg string) { a.errorf("%s", msg) },
		OnReady: func() {
			req.notify.ready()
			if req.onReady != nil {
				req.onReady()
			}
		},
		OnFailure: req.notify.failed,
	})
	var f *daemon.Failure
	if errors.As(err, &f) {
		return quietCode(f.Code) // daemon reported it
	}
	return err
}
