package cli

import (
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/daemon"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

func (a *agentCLI) diagnosticsCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "diagnostics",
		Usage:     "write a diagnostics bundle (.tar.gz) to attach to a ticket; never holds a secret",
		UsageText: "edge-agent diagnostics [--config FILE] [--out FILE.tar.gz]",
		Description: `The bundle holds the effective config with every secret redacted, the status,
the metrics, the last 500 log records, the WAL summary, a goroutine dump and
the build, with a MANIFEST.txt saying what each file is and what could not be
collected. Each file is cut at 2 MiB, the whole at 8 MiB.

While the agent runs, the bundle comes from it over its HTTP API
(http.listen; GET /debug/diagnostics), the same one the OpAMP server gets
with the diagnostics task. When it is stopped, it is read from its files:
the config, the WAL opened read-only, the tail of log.file; there is then no
status, metrics or goroutine dump.

--out defaults to edge-agent-diagnostics-<UTC time>.tar.gz in the current
folder; "-" writes to stdout. The file is created with mode 0600.

Examples:
   edge-agent diagnostics
   edge-agent diagnostics --out /tmp/agent.tar.gz && tar tzf /tmp/agent.tar.gz`,
		Flags: agentFlags(
			&ucli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "where to write the bundle (- for stdout)", TakesFile: true},
		),
		OnUsageError: usageError,
		Action:       a.diagnostics,
	}
}

func (a *agentCLI) diagnostics(c *ucli.Context) error {
	home := a.home()
	cfg, _, err := a.loadConfig(c.String(flagConfig), nil)
	if err != nil {
		return err
	}
	pidFile := paths.PIDFile(a.env.Getenv, home)
	probe, err := process.Probe(pidFile)
	if err != nil {
		return err
	}
	now := time.Now()
	var data []byte
	var from string
	if probe.Running {
		var client *api.Client
		hs, err := cfg.HTTP.Local(pidFile)
		if err == nil {
			client, err = api.NewClient(hs)
		}
		if err != nil {
			return withCode(exitcode.Failure, fmt.Errorf("the agent runs (pid %d) but its bundle comes over its API: %w; set http.listen, or stop it to read its files", probe.PID, err))
		}
		if data, err = client.Diagnostics(c.Context); err != nil {
			return withCode(exitcode.Failure, fmt.Errorf("diagnostics from the running agent (pid %d): %w", probe.PID, err))
		}
		from = fmt.Sprintf("the running agent (pid %d)", probe.PID)
	} else {
		b := daemon.Build{Version: a.env.Build.Version, Commit: a.env.Build.Commit}
		if data, err = daemon.StoppedBundle(cfg, home, a.env.Getenv, b, now); err != nil {
			return withCode(exitcode.Failure, err)
		}
		from = "the stopped agent's files"
	}
	out := c.String("out")
	if out == "-" {
		_, err := a.env.Stdout.Write(data)
		return err
	}
	if out == "" {
		out = "edge-agent-diagnostics-" + now.UTC().Format("20060102T150405Z") + ".tar.gz"
	}
	if err := identity.WriteAtomic(out, data, 0o600); err != nil {
		return withCode(exitcode.Failure, fmt.Errorf("write the bundle: %w", err))
	}
	fmt.Fprintf(a.env.Stderr, "wrote %s (%d bytes) from %s\n", out, len(data), from)

	return nil
}
