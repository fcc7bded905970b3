package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/term"
	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
	"github.com/edge-agent/edge-agent/starter/internal/top"
)

func (a *agentCLI) topCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "top",
		Usage:     "watch a running agent live: inputs, WAL, output, health (exit 3 not running)",
		UsageText: "edge-agent top [--config FILE] [--once] [--interval D]",
		Description: `Reads the running agent's HTTP API (http.listen, with http.token and
http.tls as agent.yaml sets them, like status) every --interval and shows:
the health of each component; the output's connection, delivery and send
rates, mean send time and last error with its age; the WAL by status with
its bytes and the oldest pending row's age, drops and backpressure; each
input's files, read rates and lag.

Keys: s sort the files (lag, rate, path), i show one input's files (cycles),
p pause/resume, q quit.

On a terminal that cannot be redrawn (TERM=dumb) or when the output is not
a terminal it prints a plain text frame each interval instead; --once
prints one frame (after one interval, so its rates are filled) and exits.

Exit codes: 0 after q (or the frame of --once), 3 when no agent runs, 1
when the running agent's API cannot be read.

Examples:
   edge-agent top
   edge-agent top --once
   TERM=dumb edge-agent top --interval 10s >> top.log`,
		Flags: agentFlags(
			&ucli.BoolFlag{Name: "once", Usage: "print one plain frame and exit"},
			&ucli.DurationFlag{Name: "interval", Value: top.DefaultInterval, Usage: "time between two readings"},
		),
		OnUsageError: usageError,
		Action:       a.top,
	}
}

func (a *agentCLI) top(c *ucli.Context) error {
	client, pid, err := a.runningAPI(c)
	if err != nil {
		return err
	}
	o := top.Options{Source: client, Interval: c.Duration("interval")}
	out, isFile := a.env.Stdout.(*os.File)
	interactive := isFile && term.IsTerminal(out.Fd()) && term.IsTerminal(os.Stdin.Fd()) &&
		!strings.EqualFold(a.env.Getenv("TERM"), "dumb") && !c.Bool("once")
	if interactive {
		err = top.Run(c.Context, o, os.Stdin, out)
	} else {
		err = top.Plain(c.Context, o, top.PlainOptions{Once: c.Bool("once"),
			Width: envInt(a.env.Getenv, "COLUMNS"), Height: envInt(a.env.Getenv, "LINES")}, a.env.Stdout)
	}
	if err != nil {
		return fmt.Errorf("edge-agent is running (pid %d), but its API cannot be read: %w", pid, err)
	}
	return nil
}

func envInt(getenv func(string) string, name string) int {
	n, err := strconv.Atoi(strings.TrimSpace(getenv(name)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// runningAPI is a client of the running agent's local API, and its pid, found through
// its PID file and config; a stopped agent is exitcode.NotRunning, said
// once on stderr.
func (a *agentCLI) runningAPI(c *ucli.Context) (client *api.Client, pid int, err error) {
	home := a.home()
	pidFile := paths.PIDFile(a.env.Getenv, home)
	probe, err := process.Probe(pidFile)
	if err != nil {
		return nil, 0, err
	}
	if !probe.Running {
		fmt.Fprintf(a.env.Stderr, "edge-agent is not running (no agent holds %s); start it with: edge-agent start\n", pidFile)
		return nil, 0, quietCode(exitcode.NotRunning)
	}
	cfg, err := a.statusConfig(c.String(flagConfig), home)
	if err != nil {
		return nil, 0, err
	}
	hs, err := cfg.HTTP.Local(pidFile)
	if err != nil {
		return nil, 0, fmt.Errorf("edge-agent is running (pid %d), but its API cannot be found: %w", probe.PID, err)
	}
	client, err = api.NewClient(hs)
	if err != nil {
		return nil, 0, fmt.Errorf("edge-agent is running (pid %d), but its API cannot be read: %w", probe.PID, err)
	}
	return client, probe.PID, nil
}
