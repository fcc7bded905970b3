package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
)

// errRestart ends runForeground when the OpAMP server asked for a restart:
// start then re-executes the binary once every file is closed.
var errRestart = errors.New("restart requested by the OpAMP server")

// remoteAtStart returns the config to start with: the persisted remote
// config over local when management accepts remote configs and one was
// applied before, else local. notes are logged once the logger exists.
func (a *agentCLI) remoteAtStart(local *config.Config, home string, load config.LoadOptions) (cfg *config.Config, remote *management.Remote, warns []config.Warning, notes []func(*slog.Logger)) {
	m := local.Management
	if !m.Enabled() || !m.OpAMP.AcceptRemoteConfig {
		return local, nil, nil, nil
	}
	store := management.Store{Path: paths.RemoteConfigFile(a.env.Getenv, home)}
	rem, err := store.Load()
	if err != nil {
		return local, nil, nil, []func(*slog.Logger){func(l *slog.Logger) {
			l.Error("the saved remote config cannot be read; starting from the local file", "error", err)
		}}
	}
	if rem == nil {
		return local, nil, nil, nil
	}
	rcfg, warns, err := config.LoadRemote(local, rem.YAML, load)
	if err != nil {
		problems := flatten(err)
		return local, nil, nil, []func(*slog.Logger){func(l *slog.Logger) {
			for _, p := range problems {
				l.Error("the saved remote config no longer loads; starting from the local file until the server sends one", "error", p.Error(), "remote_config_file", store.Path)
			}
		}}
	}
	return rcfg, rem, warns, nil
}

// managed is what runs the OpAMP side of a started agent.
type managed struct {
	client *management.Client
	uid    identity.InstanceUID
	rl     *reloader
}

// startManagement starts the OpAMP client when management.opamp.endpoint
// is set; it returns at once (a server that is down never holds up the
// agent). restart is nil where the agent cannot restart in place.
func (a *agentCLI) startManagement(ctx context.Context, rl *reloader, rt *agent.Agent, uid identity.InstanceUID, ids identity.IDs, remote *management.Remote, home string, logger *slog.Logger, restart func()) (*managed, error) {
	m := &managed{uid: uid, rl: rl}
	cfg := rl.current()
	if !cfg.Management.Enabled() {
		return m, nil
	}
	s := cfg.Management.OpAMP
	host, _ := os.Hostname()
	o := management.Options{
		Settings:    s,
		InstanceUID: uid,
		Source:      rt,
		Describe: func() management.Description {
			c := rl.current()
			d := management.Description{Version: a.env.Build.Version, AgentID: ids.Agent, HostName: host, OS: runtime.GOOS, Arch: runtime.GOARCH}
			// The single input: or every inputs: entry, in config order.
			cfgs := []input.Config{c.Input}
			for _, e := range c.Inputs {
				cfgs = append(cfgs, e.Config)
			}
			for _, ic := range cfgs {
				if src, ok := ic.(input.Sourcer); ok {
					d.InputPaths = append(d.InputPaths, src.Sources()...)
				}
			}
			if dst, ok := c.Output.Options.(output.Destination); ok {
				d.OutputEndpoint = dst.Destination()
			}
			return d
		},
		EffectiveConfig: func() []byte { return rl.current().EffectiveYAML() },
		Store:           management.Store{Path: paths.RemoteConfigFile(a.env.Getenv, home)},
		Remote:          remote,
		Restart:         restart,
		Logger:          logger.With("component", "opamp"),
	}
	if s.AcceptRemoteConfig {
		o.Applier = rl
	}
	c, err := management.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	m.client = c
	logger.Info("OpAMP management on", "opamp_endpoint", s.Endpoint, "instance_uid", uid.String(),
		"accept_remote_config", s.AcceptRemoteConfig, "heartbeat", slog.DurationValue(s.HeartbeatInterval))
	return m, nil
}

func (m *managed) close() {
	if m != nil && m.client != nil {
		m.client.Close()
	}
}

// status is the management part of /debug/status.
func (m *managed) status() *api.Management {
	out := &api.Management{InstanceUID: m.uid.String(), ConfigSource: m.rl.current().Origin()}
	if m.client != nil {
		st := m.client.Status()
		out.Endpoint, out.Connected = st.Endpoint, &st.Connected
		out.RemoteConfig, out.RemoteConfigError = st.RemoteConfig, st.RemoteConfigError
	}
	return out
}

// restartArgs are the arguments to start again with: the same, less the
// readiness pipe of start --background, which belonged to the first run.
func restartArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--"+notifyFDFlag || a == "-"+notifyFDFlag:
			i++ // and its value
		case len(a) > len(notifyFDFlag)+3 && (a[:len(notifyFDFlag)+3] == "--"+notifyFDFlag+"="):
		default:
			out = append(out, a)
		}
	}
	return out
}
