package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/check"
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
running. While a config from the OpAMP server is in force, the file gives
its management section and queue.path and the remote config keeps the
rest (the agent logs config_source remote).

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

// reloader changes the running agent's config: on SIGHUP it re-reads the
// local file, and the OpAMP client hands it remote configs (ApplyRemote).
// While a remote config is in force, a SIGHUP re-reads the local file for
// what always comes from it (management, queue.path) and keeps the remote
// rest. One change at a time: mu serialises the signal goroutine and the
// OpAMP client's.
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

	mu sync.Mutex
	// local is the local file as last loaded; cur the config in force
	// (local, or a remote one over local).
	local, cur *config.Config
	// remote is the remote agent.yaml in force; nil: the local file.
	remote []byte
}

func (rl *reloader) reload(ctx context.Context) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	local, warnings, err := config.Load(rl.path, rl.load)
	if err != nil {
		rl.rt.RejectReload()
		for _, p := range flatten(err) {
			rl.logger.Error("config reload rejected; the running config is kept", "error", p.Error(), "config_hash", rl.cur.Hash)
		}
		return
	}
	rl.warn(warnings)
	next := local
	if rl.remote != nil {
		remote, warnings, err := config.LoadRemote(local, rl.remote, rl.load)
		if err != nil {
			// The local file changed what the remote config relies on
			// (a secret file, say): nothing changes.
			rl.rt.RejectReload()
			for _, p := range flatten(err) {
				rl.logger.Error("config reload rejected: the remote config in force does not load over the new local file; the running config is kept", "error", p.Error(), "config_hash", rl.cur.Hash)
			}
			return
		}
		rl.warn(warnings)
		next = remote
	}
	if err := rl.apply(ctx, next); err != nil {
		rl.logger.Error("config reload failed; the running input and output are kept", "error", err, "config_hash", rl.cur.Hash)
		return
	}
	rl.local = local
}

// ApplyRemote checks a config from the OpAMP server like `config check`
// and applies it like a reload (management.Applier). A nil yaml goes back
// to the local file. On failure nothing changes and the error holds every
// problem, one per line, worded as `config check` prints them.
func (rl *reloader) ApplyRemote(ctx context.Context, yaml []byte) error {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var next *config.Config
	var warnings []config.Warning
	var err error
	if yaml == nil {
		next, warnings, err = config.Load(rl.path, rl.load)
	} else {
		next, warnings, err = config.LoadRemote(rl.local, yaml, rl.load)
	}
	if err != nil {
		rl.rt.RejectReload()
		var probs configProblems
		for _, p := range flatten(err) {
			probs = append(probs, p.Error())
		}
		return probs
	}
	rl.warn(warnings)
	if err := rl.apply(ctx, next); err != nil {
		return err
	}
	if yaml == nil {
		rl.local = next
	}
	rl.remote = yaml
	return nil
}

// current is the config in force.
func (rl *reloader) current() *config.Config {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.cur
}

func (rl *reloader) warn(warnings []config.Warning) {
	for _, w := range warnings {
		rl.logger.Warn("config warning: " + w.String())
	}
}

// apply hands next to the running agent; rl.mu is held.
func (rl *reloader) apply(ctx context.Context, next *config.Config) error {
	changes := rl.cur.Changes(next)
	for _, key := range changes.RestartKeys {
		rl.logger.Warn("config reload: this key only changes at a restart; the running value is kept", "key", key)
	}
	opts := next.AgentOptions()
	opts.Inputs, opts.Outputs, opts.Home = rl.base.Inputs, rl.base.Outputs, rl.base.Home
	opts.IDs, opts.Logger, opts.OnReady = rl.base.IDs, rl.base.Logger, rl.base.OnReady
	opts.ConfigHash = next.Hash
	if err := rl.rt.Reload(ctx, opts, agent.Replace{Input: changes.Input, Output: changes.Output, Inputs: changes.Inputs}); err != nil {
		return err
	}
	if lvl, err := effectiveLevel(next, rl.logLevel); err == nil {
		rl.level.Set(lvl)
	}
	rl.cur = next
	rl.logger.Info("config reloaded", "config_hash", next.Hash, "changed", changes.Sections, "config_source", next.Origin())
	return nil
}

// effectiveLevel is log.level unless --log-level overrides it.
func effectiveLevel(cfg *config.Config, flag string) (slog.Level, error) {
	if flag != "" {
		return logging.ParseLevel(flag)
	}
	return slog.Level(cfg.Log.Level), nil
}

// configProblems are a refused config's problems, one per line, worded as
// `config check` prints them (what the OpAMP server shows as FAILED).
type configProblems []string

func (p configProblems) Error() string { return strings.Join(p, "\n") }
func (p configProblems) Unwrap() error { return check.ErrInvalid }
