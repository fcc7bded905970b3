package cli

import (
	"context"
	"fmt"
	"log/slog"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
)

func (a *agentCLI) reloadCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "reload",
		Usage:     "make the running agent re-read its config (SIGHUP)",
		UsageText: "edge-agent reload",
		Description: `Sends SIGHUP to the agent found through the pid file. The agent re-reads the
file it was started with (same ${ENV}, secret files and install root) and
checks it. A valid file is applied without a restart and without losing
buffered events: input, output, retry, queue limits and the agent's tuning,
and log.level at once. The agent logs "config reloaded" with the new
config_hash and the sections that changed. Keys that only a restart applies
(queue.path, queue.fsync, agent.delivery-guarantee, the ids, log.file and
the other log.* keys but log.level) are logged at WARN as needing a
restart and keep their old value. An invalid file is rejected: every
problem is logged at ERROR with its line:column, and the old config keeps
running.

This command returns once the signal is sent; the outcome is in the
agent's log. Exit codes: 0 signal sent, 3 the agent is not running.
Under systemd: ExecReload=/bin/kill -HUP $MAINPID. On Windows, which has no
SIGHUP, it sets a named event the agent creates at start
(edge-agent-<pid>-reload) instead.

Examples:
   edge-agent reload
   kill -HUP "$(cat edge-agent.pid)"`,
		OnUsageError: usageError,
		Action:       a.reload,
	}
}

func (a *agentCLI) reload(*ucli.Context) error {
	st, _, err := a.runningAgent()
	if err != nil {
		return err
	}
	if !st.Running {
		return quietCode(exitcode.NotRunning)
	}
	gone, err := requestReload(st.PID)
	if err != nil {
		return err
	}
	if gone {
		fmt.Fprintln(a.env.Stdout, "edge-agent is not running")
		return quietCode(exitcode.NotRunning)
	}
	fmt.Fprintf(a.env.Stdout, "reload requested (%s); the agent logs the outcome\n", reloadHow(st.PID))
	return nil
}

// reloader re-reads the config on SIGHUP and hands what changed to the
// running agent. Only the signal goroutine calls reload.
type reloader struct {
	path     string
	load     config.LoadOptions
	logLevel string // --log-level, which wins over log.level on reload too
	level    *slog.LevelVar
	logger   *slog.Logger
	rt       *agent.Agent
	// base holds what the process provided at start (registries, home,
	// ids, logger, callbacks); Reload keeps them anyway.
	base agent.Options
	cur  *config.Config
}

func (rl *reloader) reload(ctx context.Context) {
	next, warnings, err := config.Load(rl.path, rl.load)
	if err != nil {
		rl.rt.RejectReload()
		for _, p := range flatten(err) {
			rl.logger.Error("config reload rejected; the running config is kept", "error", p.Error(), "config_hash", rl.cur.Hash)
		}
		return
	}
	for _, w := range warnings {
		rl.logger.Warn("config warning: " + w.String())
	}
	changes := rl.cur.Changes(next)
	for _, key := range changes.RestartKeys {
		rl.logger.Warn("config reload: this key only changes at a restart; the running value is kept", "key", key)
	}
	opts := next.AgentOptions()
	opts.Inputs, opts.Outputs, opts.Home = rl.base.Inputs, rl.base.Outputs, rl.base.Home
	opts.IDs, opts.Logger, opts.OnReady = rl.base.IDs, rl.base.Logger, rl.base.OnReady
	opts.ConfigHash = next.Hash
	if err := rl.rt.Reload(ctx, opts, agent.Replace{Input: changes.Input, Output: changes.Output, Inputs: changes.Inputs}); err != nil {
		rl.logger.Error("config reload failed; the running input and output are kept", "error", err, "config_hash", rl.cur.Hash)
		return
	}
	if lvl, err := effectiveLevel(next, rl.logLevel); err == nil {
		rl.level.Set(lvl)
	}
	rl.cur = next
	rl.logger.Info("config reloaded", "config_hash", next.Hash, "changed", changes.Sections)
}

// effectiveLevel is log.level unless --log-level overrides it.
func effectiveLevel(cfg *config.Config, flag string) (slog.Level, error) {
	if flag != "" {
		return logging.ParseLevel(flag)
	}
	return slog.Level(cfg.Log.Level), nil
}
