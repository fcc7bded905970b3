package daemon

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
)

// reloader changes the running agent's config: Reload re-reads the local
// file (SIGHUP, a reload request), and the OpAMP client hands it remote
// configs (ApplyRemote). While a remote config is in force, Reload
// re-reads the local file for what always comes from it (management,
// queue.path) and keeps the remote rest. One change at a time: mu
// serialises the signal goroutine and the OpAMP client's.
type reloader struct {
	path     string
	load     config.LoadOptions
	logLevel string // --log-level, which wins over log.level on reload too
	level    *slog.LevelVar
	logger   *slog.Logger
	rt       *agent.Agent
	// base holds what the process provided at start (registries, home,
	// ids, logger, callbacks); agent.Reload keeps them anyway.
	base agent.Options

	mu sync.Mutex
	// local is the local file as last loaded; cur the config in force
	// (local, or a remote one over local).
	local, cur *config.Config
	// remote is the remote agent.yaml in force; nil: the local file.
	remote []byte
	// plain is cur without the OpAMP server's edgesocket settings, conn
	// those settings (nil: none) and connSaved their saved form.
	plain     *config.Config
	conn      *config.OutputConnection
	connSaved *savedConnection
	connStore connStore
}

// newReloader changes rt, started with base from sc; level is the log's.
func (b *boot) newReloader(sc *startConfig, rt *agent.Agent, base agent.Options, level *slog.LevelVar) *reloader {
	rl := &reloader{path: sc.path, load: sc.load, logLevel: b.o.LogLevel, level: level,
		logger: b.logger, rt: rt, base: base, local: sc.local, cur: sc.cfg, plain: sc.plain,
		connStore: connStore{dir: connectionsDir(b.o.Getenv, b.o.Home)}, connSaved: sc.conn}
	if sc.conn != nil {
		oc := sc.conn.outputConnection()
		rl.conn = &oc
	}
	if sc.remote != nil {
		rl.remote = sc.remote.YAML
	}
	return rl
}

// Reload re-reads the local file and applies it. A file that does not
// load, or a remote config in force that no longer loads over it, changes
// nothing; either way the outcome is logged.
func (rl *reloader) Reload(ctx context.Context) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	local, warnings, err := config.Load(rl.path, rl.load)
	if err != nil {
		rl.reject(err, "config reload rejected; the running config is kept")
		return
	}
	rl.warn(warnings)
	next := local
	if rl.remote != nil {
		remote, warnings, err := config.LoadRemote(local, rl.remote, rl.load)
		if err != nil {
			// The local file changed what the remote config relies on
			// (a secret file, say): nothing changes.
			rl.reject(err, "config reload rejected: the remote config in force does not load over the new local file; the running config is kept")
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

// reject counts a refused reload and logs each problem with msg.
func (rl *reloader) reject(err error, msg string) {
	rl.rt.RejectReload()
	for _, p := range config.Problems(err) {
		rl.logger.Error(msg, "error", p.Error(), "config_hash", rl.cur.Hash)
	}
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
		for _, p := range config.Problems(err) {
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

// apply hands next, with the server's edgesocket settings over it, to
// the running agent; rl.mu is held.
func (rl *reloader) apply(ctx context.Context, next *config.Config) error {
	plain := next
	if rl.conn != nil {
		var err error
		if next, err = next.WithOutputConnection(*rl.conn); err != nil {
			return err
		}
	}
	changes := rl.cur.Changes(next)
	for _, key := range changes.RestartKeys {
		rl.logger.Warn("config reload: this key only changes at a restart; the running value is kept", "key", key)
	}
	opts := next.AgentOptions()
	opts.Inputs, opts.Outputs, opts.Home = rl.base.Inputs, rl.base.Outputs, rl.base.Home
	opts.IDs, opts.Logger, opts.OnReady = rl.base.IDs, rl.base.Logger, rl.base.OnReady
	opts.ConfigHash = next.Hash
	if err := rl.rt.Reload(ctx, opts, agent.Replace{Output: changes.Output, Inputs: changes.Inputs}); err != nil {
		return err
	}
	if lvl, err := effectiveLevel(next, rl.logLevel); err == nil {
		rl.level.Set(lvl)
	}
	rl.cur, rl.plain = next, plain
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
