package daemon

import (
	"io"
	"log/slog"

	"github.com/edge-agent/edge-agent/connector/edgesocket"
	"github.com/edge-agent/edge-agent/connector/execin"
	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/httpin"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/journald"
	"github.com/edge-agent/edge-agent/connector/mqtt"
	"github.com/edge-agent/edge-agent/connector/otlp"
	"github.com/edge-agent/edge-agent/connector/self"
	"github.com/edge-agent/edge-agent/connector/stdin"
	"github.com/edge-agent/edge-agent/connector/syslog"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
)

// LoadOptions are what every load of agent.yaml takes, at start, at a
// reload and in the commands that only read it: the input and output
// types this build has, the environment and the install root. The console
// output writes its events to stdout; nil where no sender is built. own is
// the hub the agent's logger ships its own records from (the self input);
// nil where no agent runs.
func LoadOptions(home string, getenv func(string) string, stdout io.Writer, own *self.Hub) config.LoadOptions {
	return config.LoadOptions{
		Registry: input.NewRegistry(file.NewFactory(), journald.NewFactory(), syslog.NewFactory(), edgesocket.NewFactory(),
			mqtt.NewFactory(), httpin.NewFactory(), stdin.NewFactory(), execin.NewFactory(), otlp.NewFactory(), self.NewFactory(own)),
		Outputs: output.NewRegistry(output.NewConsoleFactory(stdout), output.NewTransportFactory()),
		Getenv:  getenv,
		Home:    home,
	}
}

// startConfig is the config a run starts with, and how it was found.
type startConfig struct {
	path string
	load config.LoadOptions
	// local is the file as loaded; cfg the config in force: local, or the
	// remote config last applied, over local.
	local, cfg *config.Config
	remote     *management.Remote
	// plain is cfg without the saved edgesocket connection settings, conn
	// those settings (nil: none).
	plain    *config.Config
	conn     *savedConnection
	warnings []config.Warning
	// notes are logged once the logger exists.
	notes []func(*slog.Logger)
}

// loadAtStart loads the local file and, when management accepts remote
// configs and one was applied before, the remote config over it: the
// fleet's config wins over the file but for management and queue.path.
func loadAtStart(o Options, own *self.Hub) (*startConfig, error) {
	sc := &startConfig{load: LoadOptions(o.Home, o.Getenv, o.Stdout, own)}
	sc.load.StdinInput = o.StdinInput
	var err error
	if sc.path, err = paths.ConfigPath(o.ConfigPath, o.Getenv, o.Home); err != nil {
		return nil, err
	}
	if sc.local, sc.warnings, err = config.Load(sc.path, sc.load); err != nil {
		return nil, err
	}
	sc.cfg = sc.local
	sc.applySaved(paths.RemoteConfigFile(o.Getenv, o.Home))
	sc.applySavedConnection(connStore{dir: connectionsDir(o.Getenv, o.Home)})
	return sc, nil
}

// applySaved puts the remote config saved in file over the local one, if
// management takes remote configs and it still loads.
func (sc *startConfig) applySaved(file string) {
	m := sc.local.Management
	if !m.Enabled() || !m.OpAMP.AcceptRemoteConfig {
		return
	}
	store := management.Store{Path: file}
	rem, err := store.Load()
	if err != nil {
		sc.notes = append(sc.notes, func(l *slog.Logger) {
			l.Error("the saved remote config cannot be read; starting from the local file", "error", err)
		})
		return
	}
	if rem == nil {
		return
	}
	rcfg, warns, err := config.LoadRemote(sc.local, rem.YAML, sc.load)
	if err != nil {
		problems := config.Problems(err)
		sc.notes = append(sc.notes, func(l *slog.Logger) {
			for _, p := range problems {
				l.Error("the saved remote config no longer loads; starting from the local file until the server sends one", "error", p.Error(), "remote_config_file", store.Path)
			}
		})
		return
	}
	sc.cfg, sc.remote = rcfg, rem
	sc.warnings = append(sc.warnings, warns...)
}

// logNotes logs what loading found, once the log is open.
func (sc *startConfig) logNotes(logger *slog.Logger, home string) {
	logger.Debug("config loaded", "config_path", sc.path, "install_root", home)
	for _, w := range sc.warnings {
		logger.Warn("config warning: " + w.String())
	}
	for _, note := range sc.notes {
		note(logger)
	}
	logger.Info("config in effect", "config_source", sc.cfg.Origin(), "config_hash", sc.cfg.Hash, "config_path", sc.path)
}
