package daemon

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/self"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/ownlogs"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
)

// managementOptions are what the OpAMP side of a run is built from.
type managementOptions struct {
	reloader *reloader
	agent    *agent.Agent
	ids      agentIDs
	remote   *management.Remote // the remote config in force at start
	home     string
	getenv   func(string) string
	version  string
	logger   *slog.Logger
	restart  func() // nil where the agent cannot restart in place
	// configPath is the local agent.yaml (a staged version checks it).
	configPath string
	tasks      management.Tasks
	// own is the agent's log hub: own_logs offers ship from it.
	own *self.Hub
}

// managed is what runs the OpAMP side of a started agent.
type managed struct {
	client *management.Client // nil: management is off
	ids    agentIDs
	rl     *reloader
	// versions is set when self-upgrade is on.
	versions func() *api.Versions
	// stopShipper ends the own-logs shipper and waits for it; nil
	// without one.
	stopShipper func()
}

// startManagement starts the OpAMP client when management.opamp.endpoint
// is set; it returns at once (a server that is down never holds up the
// agent).
func startManagement(ctx context.Context, mo managementOptions) (*managed, error) {
	m := &managed{ids: mo.ids, rl: mo.reloader}
	cfg := mo.reloader.current()
	if !cfg.Management.Enabled() {
		return m, nil
	}
	s := cfg.Management.OpAMP
	o := management.Options{
		Settings:        s,
		InstanceUID:     mo.ids.uid,
		Source:          mo.agent,
		Describe:        describer(mo.reloader, mo.version, mo.ids.ids.Agent),
		EffectiveConfig: func() []byte { return mo.reloader.current().EffectiveYAML() },
		Store:           management.Store{Path: paths.RemoteConfigFile(mo.getenv, mo.home)},
		Remote:          mo.remote,
		Restart:         mo.restart,
		Tasks:           mo.tasks,
		Logger:          mo.logger.With("component", "opamp"),
	}
	if s.AcceptRemoteConfig {
		o.Applier = mo.reloader
	}
	var late atomic.Pointer[management.Client]
	if up := newUpgrader(mo, s.Packages, mo.configPath, func(r upgrade.Report) {
		if c := late.Load(); c != nil {
			c.ReportPackage(r)
		}
	}); up != nil {
		o.Packages = up
		layout := UpgradeLayout(mo.getenv, mo.home)
		m.versions = func() *api.Versions { return VersionsStatus(layout, mo.version) }
	}
	if _, ok := cfg.Output.Options.(*output.TransportConfig); ok {
		o.Connections = mo.reloader
	}
	o.OpAMPStore = &management.OpAMPStore{Dir: connectionsDir(mo.getenv, mo.home)}
	if mo.own != nil {
		o.OwnLogs, m.stopShipper = startShipper(ctx, mo)
	}
	c, err := management.Start(ctx, o)
	if err != nil {
		m.close()
		return nil, err
	}
	late.Store(c)
	m.client = c
	mo.logger.Info("OpAMP management on", "opamp_endpoint", s.Endpoint, "instance_uid", mo.ids.uid.String(),
		"accept_remote_config", s.AcceptRemoteConfig, "heartbeat", slog.DurationValue(s.HeartbeatInterval))
	return m, nil
}

// describer describes the agent to the OpAMP server from the config in
// force when asked.
func describer(rl *reloader, version, agentID string) func() management.Description {
	host, _ := os.Hostname()
	return func() management.Description {
		c := rl.current()
		d := management.Description{Version: version, AgentID: agentID, HostName: host, OS: runtime.GOOS, Arch: runtime.GOARCH}
		d.InputPaths = inputPaths(c)
		if dst, ok := c.Output.Options.(output.Destination); ok {
			d.OutputEndpoint = dst.Destination()
		}
		return d
	}
}

// inputPaths are the sources of every input, in config order.
func inputPaths(c *config.Config) []string {
	var out []string
	for _, e := range c.Inputs {
		if src, ok := e.Config.(input.Sourcer); ok {
			out = append(out, src.Sources()...)
		}
	}
	return out
}

func (m *managed) close() {
	if m != nil && m.client != nil {
		m.client.Close()
	}
	if m != nil && m.stopShipper != nil {
		m.stopShipper()
	}
}

// ownLogsLevel is the lowest level shipped to an own_logs endpoint.
const ownLogsLevel = slog.LevelInfo

// startShipper runs the shipper of own_logs offers until the returned
// func stops it. Its logger ships nothing: a failure to ship own logs
// never becomes more own logs.
func startShipper(ctx context.Context, mo managementOptions) (*ownlogs.Shipper, func()) {
	host, _ := os.Hostname()
	sh := ownlogs.New(ownlogs.Options{
		Attach:   func(s ownlogs.Sink) func() { return mo.own.Attach(ownLogsLevel, s) },
		Resource: ownlogs.Resource{ServiceName: "edge-agent", InstanceID: mo.ids.uid.String(), Version: mo.version, Host: host},
		Logger:   self.Unshipped(mo.logger).With("component", "own_logs"),
	})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sh.Run(ctx)
	}()
	return sh, func() {
		cancel()
		<-done
	}
}

// status is the management part of /debug/status.
func (m *managed) status() *api.Management {
	out := &api.Management{InstanceUID: m.ids.uid.String(), ConfigSource: m.rl.current().Origin()}
	if m.client != nil {
		st := m.client.Status()
		out.Endpoint, out.Connected = st.Endpoint, &st.Connected
		out.RemoteConfig, out.RemoteConfigError = st.RemoteConfig, st.RemoteConfigError
	}
	if m.versions != nil {
		out.Versions = m.versions()
	}
	return out
}
