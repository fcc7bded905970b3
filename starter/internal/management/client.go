package management

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	opamp "github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// ConfigKey and ConfigContentType name the remote config map entry the
// agent takes: one full agent.yaml.
const (
	ConfigKey         = "agent.yaml"
	ConfigContentType = "text/yaml"
)

// Source is the running agent as management sees it; *agent.Agent is one.
type Source interface {
	Snapshot() agent.Status
}

// Applier validates a remote agent.yaml with the checks of `config check`
// and applies it through the reload path. A nil yaml means "back to the
// local file" (the server withdrew its config). A config that fails
// changes nothing; the error lists every problem as `config check` prints
// them (file:line:column: key: problem).
type Applier interface {
	ApplyRemote(ctx context.Context, yaml []byte) error
}

// Description is what the agent tells the server about itself, besides
// its instance uid. Nothing in it is a secret.
type Description struct {
	Version        string
	AgentID        string
	HostName       string
	OS, Arch       string
	InputPaths     []string
	OutputEndpoint string
}

// Options are what Start needs. Source, Describe and EffectiveConfig are
// read on every report, so a reload shows at once.
type Options struct {
	Settings    OpAMPSettings
	InstanceUID identity.InstanceUID
	Source      Source
	Describe    func() Description
	// EffectiveConfig is the config in force, secrets redacted, as YAML.
	EffectiveConfig func() []byte
	// Applier is nil when remote configs are not accepted.
	Applier Applier
	// Store keeps the applied remote config for the next start.
	Store Store
	// Remote is the remote config in force at start (from Store), or nil.
	Remote *Remote
	// Restart stops the agent gracefully and starts it again; nil where
	// that is not supported (the capability is then not reported).
	Restart func()
	// Packages installs offered packages (self-upgrade); nil leaves
	// AcceptsPackages and ReportsPackageStatuses out.
	Packages Packages
	// Backoff paces reconnection attempts; zero values take one second
	// growing to the heartbeat interval.
	Backoff backoff.Policy
	// StallAfter is the health judgement's (agent.Status.Health).
	StallAfter time.Duration
	Logger     *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// OpAMPStore, when set, takes the server's OpAMP connection settings
	// (AcceptsOpAMPConnectionSettings) and keeps them once they connect;
	// nil: the capability is not advertised.
	OpAMPStore *OpAMPStore
	// Connections takes the server's edgesocket connection settings; nil:
	// AcceptsOtherConnectionSettings is not advertised.
	Connections ConnectionApplier
	// OwnLogs ships the agent's own logs where the server's own_logs
	// connection settings say; nil: ReportsOwnLogs is not advertised.
	OwnLogs OwnLogsApplier
	// Tasks are the operator tasks run on the server's request (custom
	// messages of opamptask.Capability); nil: none, and nothing advertised.
	Tasks Tasks
	// HealthEvery is how often health and the config hash are compared
	// with what was reported; zero means one second (capped at the
	// heartbeat interval).
	HealthEvery time.Duration
}

// Status is the management side of `edge-agent status`.
type Status struct {
	Endpoint    string
	Connected   bool
	InstanceUID string
	// RemoteConfig is the status of the last remote config (UNSET,
	// APPLYING, APPLIED, FAILED) and its error.
	RemoteConfig      string
	RemoteConfigError string
}

// Client keeps the agent registered with its OpAMP server: it connects
// (never holding up the agent: everything runs on its own goroutines),
// reconnects with the shared jittered backoff, reports description,
// health and effective config, and applies remote configs.
type Client struct {
	o      Options
	log    *slog.Logger
	offers chan *protobufs.AgentRemoteConfig
	tasks  chan *protobufs.CustomMessage
	done   chan struct{}
	cancel context.CancelFunc

	mu        sync.Mutex
	cur       opamp.OpAMPClient // the session's client; nil between sessions
	connected bool
	remote    *protobufs.RemoteConfigStatus
	applied   []byte // hash of the remote config in force (nil: local)
	health    *protobufs.ComponentHealth
	restart   bool
	pkgStatus *protobufs.PackageStatuses // last package status reported

	ctx   context.Context // the client's, for package installs
	pkgWG sync.WaitGroup
	// connStatus is the last connection settings' fate, reported again
	// by every new session.
	connStatus *protobufs.ConnectionSettingsStatus
	// settings are the OpAMP settings in force: Options.Settings, or the
	// server's (saved) over them.
	settings OpAMPSettings
	saved    *savedOpAMP
	// offeredHash is the hash of the connection settings being offered.
	offeredHash []byte
	swaps       chan swap
}

// Start begins the registration in the background and returns at once.
func Start(ctx context.Context, o Options) (*Client, error) {
	if o.Source == nil || o.Describe == nil || o.EffectiveConfig == nil {
		return nil, errors.New("management: Source, Describe and EffectiveConfig are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	settings := o.Settings
	var saved *savedOpAMP
	if o.OpAMPStore != nil {
		v, err := o.OpAMPStore.load()
		if err != nil {
			o.Logger.Error("the saved OpAMP connection settings are not used; connecting with management.opamp", "error", err.Error())
		} else if v != nil {
			settings, saved = v.over(o.Settings), v
		}
	}
	if _, err := settings.TLS.Build(); err != nil {
		return nil, fmt.Errorf("management.opamp.tls: %w", err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HealthEvery <= 0 {
		o.HealthEvery = min(time.Second, o.Settings.HeartbeatInterval)
	}
	if o.Backoff.Initial <= 0 && o.Backoff.Max <= 0 {
		o.Backoff = backoff.Policy{Initial: time.Second, Max: max(time.Second, o.Settings.HeartbeatInterval), Rand: o.Backoff.Rand}
	}
	c := &Client{
		o:      o,
		log:    o.Logger.With("opamp_endpoint", settings.Endpoint),
		offers: make(chan *protobufs.AgentRemoteConfig, 1),
		tasks:  make(chan *protobufs.CustomMessage, taskQueue),
		done:   make(chan struct{}),

		settings: settings,
		saved:    saved,
		swaps:    make(chan swap, 1),
	}
	if o.Remote != nil {
		c.applied = o.Remote.Hash
		c.remote = &protobufs.RemoteConfigStatus{LastRemoteConfigHash: o.Remote.Hash,
			Status: protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED}
	}
	c.health = c.healthReport(o.Source.Snapshot())
	c.initialPackageStatus()
	ctx, c.cancel = context.WithCancel(ctx)
	c.ctx = ctx
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); c.runTasks(ctx) }()
	go func() { defer wg.Done(); c.supervise(ctx) }()
	go func() { defer wg.Done(); c.applyOffers(ctx) }()
	go func() { defer wg.Done(); c.watch(ctx) }()
	go func() { wg.Wait(); close(c.done) }()
	return c, nil
}

// Close disconnects (telling the server when connected) and waits for the
// client's goroutines.
func (c *Client) Close() {
	c.cancel()
	<-c.done
	c.pkgWG.Wait()
}

// Status reports the connection and the last remote config's fate.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{Endpoint: c.settings.Endpoint, Connected: c.connected, InstanceUID: c.o.InstanceUID.String(), RemoteConfig: "UNSET"}
	if c.remote != nil {
		st.RemoteConfig = strings.TrimPrefix(c.remote.Status.String(), "RemoteConfigStatuses_")
		st.RemoteConfigError = c.remote.ErrorMessage
	}
	return st
}

// capabilities are what the agent implements, no more.
func (c *Client) capabilities() protobufs.AgentCapabilities {
	caps := protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat
	if c.o.Applier != nil {
		caps |= protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig
	}
	if c.o.Restart != nil {
		caps |= protobufs.AgentCapabilities_AgentCapabilities_AcceptsRestartCommand
	}
	if c.o.Packages != nil {
		caps |= protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses
	}
	if c.o.Connections != nil {
		caps |= protobufs.AgentCapabilities_AgentCapabilities_AcceptsOtherConnectionSettings |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsConnectionSettingsStatus
	}
	if c.o.OpAMPStore != nil {
		caps |= protobufs.AgentCapabilities_AgentCapabilities_AcceptsOpAMPConnectionSettings |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsConnectionSettingsStatus
	}
	if c.o.OwnLogs != nil {
		caps |= protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnLogs |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsConnectionSettingsStatus
	}
	return caps
}

// session events.
const (
	evConnected = iota + 1
	evFailed
)

// event is one session event; err is the library's reason for evFailed.
type event struct {
	kind int
	err  error
}

// supervise runs one opamp-go client per connection attempt. The library
// retries on its own schedule; the agent wants the shared backoff (the
// same pacing and jitter as its engine connection, so a fleet cut off by
// one outage does not come back at once), so a session that fails to
// connect is stopped and the next one starts after backoff.Jittered.
func (c *Client) supervise(ctx context.Context) {
	attempt := 0
	for {
		events := make(chan event, 8)
		c.mu.Lock()
		settings := c.settings
		c.mu.Unlock()
		cl, err := c.startSession(ctx, events, settings, true)
		if err != nil {
			c.log.Error("OpAMP client did not start; management is off until a restart", slog.String("error", err.Error()))
			return
		}
		failed := false
		for !failed && ctx.Err() == nil {
			select {
			case ev := <-events:
				switch ev.kind {
				case evConnected:
					if attempt > 0 || !c.isConnected() {
						c.log.Info("registered with the OpAMP server", "instance_uid", c.o.InstanceUID.String())
					}
					attempt = 0
					c.setConnected(true)
				case evFailed:
					failed = true
				}
			case sw := <-c.swaps:
				// New OpAMP connection settings connected: the session in
				// force gives way to theirs.
				c.endSession(cl, true)
				cl, events, attempt = sw.cl, sw.events, 0
				c.mu.Lock()
				c.cur, c.settings, c.connected = cl, sw.settings, true
				c.mu.Unlock()
				c.log.Info("switched to the OpAMP server's new connection settings", "new_endpoint", sw.settings.Endpoint)
			case <-ctx.Done():
			}
		}
		c.endSession(cl, true)
		if ctx.Err() != nil {
			return
		}
		wait := c.o.Backoff.Jittered(attempt)
		attempt++
		c.log.Warn("OpAMP server unreachable; the agent runs on and retries", slog.Duration("retry_in", wait), "attempt", attempt)
		if backoff.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// startSession starts one opamp-go client with s; adopt makes it the
// session in force (a trial of new settings is not, until it connects).
func (c *Client) startSession(ctx context.Context, events chan<- event, s OpAMPSettings, adopt bool) (opamp.OpAMPClient, error) {
	cl, err := c.newLibClient(s.Endpoint)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	remote, connStatus := c.remote, c.connStatus
	c.mu.Unlock()
	tlsCfg, err := s.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("management.opamp.tls: %w", err)
	}
	interval := s.HeartbeatInterval
	settings := types.StartSettings{
		OpAMPServerURL:     s.Endpoint,
		Header:             s.header(),
		TLSConfig:          tlsCfg,
		InstanceUid:        types.InstanceUid(c.o.InstanceUID),
		HeartbeatInterval:  &interval,
		RemoteConfigStatus: remote,
		Callbacks:          c.callbacks(events),
		// The library reports it only with ReportsConnectionSettingsStatus.
		LastConnectionSettingsStatus: connStatus,
	}
	if c.o.Packages != nil {
		settings.PackagesStateProvider = packageState{c}
		// opamp-go checks SetCapabilities against a provider it only
		// learns at Start, so the package capabilities can only be given
		// here, in the deprecated field.
		settings.Capabilities = c.capabilities()
	}
	if err := cl.Start(ctx, settings); err != nil {
		return nil, fmt.Errorf("start OpAMP client: %w", err)
	}
	if adopt {
		c.mu.Lock()
		c.cur = cl
		c.mu.Unlock()
	}
	return cl, nil
}

// newLibClient is an opamp-go client for the endpoint's scheme (HTTP
// polling, else WebSocket) that knows the description, health and
// capabilities to report.
func (c *Client) newLibClient(endpoint string) (opamp.OpAMPClient, error) {
	logger := &libLogger{log: c.log}
	var cl opamp.OpAMPClient
	u, _ := url.Parse(endpoint)
	if u != nil && (u.Scheme == "http" || u.Scheme == "https") {
		cl = opamp.NewHTTP(logger)
	} else {
		cl = opamp.NewWebSocket(logger)
	}
	if err := cl.SetAgentDescription(c.description()); err != nil {
		return nil, fmt.Errorf("agent description: %w", err)
	}
	c.mu.Lock()
	health := c.health
	c.mu.Unlock()
	// Health first: the library refuses ReportsHealth without one.
	if err := cl.SetHealth(health); err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	// The package capabilities go in at Start (startSession).
	caps := c.capabilities() &^ (protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses)
	if err := cl.SetCapabilities(&caps); err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	if err := cl.SetCustomCapabilities(c.customCapabilities()); err != nil {
		return nil, fmt.Errorf("custom capabilities: %w", err)
	}
	return cl, nil
}

// callbacks are one session's answers to the library: connection events
// go to events (a pending failure is enough), remote configs to offer,
// commands to command.
func (c *Client) callbacks(events chan<- event) types.Callbacks {
	send := func(ev event) {
		select {
		case events <- ev:
		default: // a pending failure is enough
		}
	}
	var lastErr error
	return types.Callbacks{
		OnConnect: func(context.Context) { send(event{kind: evConnected}) },
		OnConnectFailed: func(_ context.Context, err error) {
			if lastErr == nil || err.Error() != lastErr.Error() {
				c.log.Debug("OpAMP connection failed", slog.String("error", err.Error()))
			}
			lastErr = err
			send(event{kind: evFailed, err: err})
		},
		OnError: func(_ context.Context, e *protobufs.ServerErrorResponse) {
			c.log.Warn("OpAMP server reported an error", slog.String("error", e.GetErrorMessage()))
		},
		OnMessage: func(_ context.Context, msg *types.MessageData) {
			if msg.OfferedConnectionsSettingsHash != nil {
				// For onOpAMPSettings, which the library calls next.
				c.mu.Lock()
				c.offeredHash = msg.OfferedConnectionsSettingsHash
				c.mu.Unlock()
			}
			if msg.RemoteConfig != nil {
				c.offer(msg.RemoteConfig)
			}
			if msg.PackagesAvailable != nil {
				c.handlePackages(msg.PackagesAvailable)
			}
			if msg.CustomMessage != nil {
				c.takeTask(msg.CustomMessage)
			}
		},
		GetEffectiveConfig: func(context.Context) (*protobufs.EffectiveConfig, error) {
			return &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{
				ConfigKey: {Body: c.o.EffectiveConfig(), ContentType: ConfigContentType},
			}}}, nil
		},
		OnCommand: func(_ context.Context, cmd *protobufs.ServerToAgentCommand) error {
			return c.command(cmd)
		},
		OnConnectionSettings:      c.onConnectionSettings,
		OnOpampConnectionSettings: c.onOpAMPSettings,
	}
}

// endSession stops cl; current says it is the session in force.
func (c *Client) endSession(cl opamp.OpAMPClient, current bool) {
	if current {
		c.mu.Lock()
		c.cur = nil
		c.connected = false
		c.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.Stop(ctx); err != nil {
		c.log.Debug("OpAMP client stop", slog.String("error", err.Error()))
	}
}

func (c *Client) isConnected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

func (c *Client) setConnected(v bool) {
	c.mu.Lock()
	c.connected = v
	c.mu.Unlock()
}

// withClient runs f on the session's client, if one runs.
func (c *Client) withClient(f func(opamp.OpAMPClient) error) {
	c.mu.Lock()
	cl := c.cur
	c.mu.Unlock()
	if cl == nil {
		return
	}
	if err := f(cl); err != nil {
		c.log.Debug("OpAMP report not queued", slog.String("error", err.Error()))
	}
}

// offer hands a remote config to applyOffers; a newer offer replaces one
// not yet taken.
func (c *Client) offer(rc *protobufs.AgentRemoteConfig) {
	if c.o.Applier == nil {
		c.log.Warn("the OpAMP server offered a config; management.opamp.accept-remote-config is false, so it is ignored")
		return
	}
	for {
		select {
		case c.offers <- rc:
			return
		default:
		}
		select {
		case <-c.offers:
		default:
		}
	}
}

// applyOffers applies remote configs one at a time, off the library's
// callback goroutine: a reload takes as long as the in-flight sends.
func (c *Client) applyOffers(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case rc := <-c.offers:
			c.apply(ctx, rc)
		}
	}
}

func (c *Client) apply(ctx context.Context, rc *protobufs.AgentRemoteConfig) {
	c.mu.Lock()
	same := c.remote != nil && bytes.Equal(c.remote.LastRemoteConfigHash, rc.GetConfigHash()) &&
		c.remote.Status != protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING
	c.mu.Unlock()
	if same {
		return // the server repeats its offer at every connection
	}
	files := rc.GetConfig().GetConfigMap()
	c.setRemote(rc.GetConfigHash(), protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING, "")
	var err error
	var yaml []byte
	switch f, ok := files[ConfigKey]; {
	case len(files) == 0:
		// An empty map withdraws the remote config: back to the file.
	case !ok:
		err = fmt.Errorf("the config map has no %q entry (got %s); send the whole agent.yaml under that name", ConfigKey, strings.Join(slices.Sorted(maps.Keys(files)), ", "))
	case f.GetContentType() != "" && f.GetContentType() != ConfigContentType && f.GetContentType() != "application/yaml":
		err = fmt.Errorf("%s has content type %q; want %s", ConfigKey, f.GetContentType(), ConfigContentType)
	default:
		yaml = f.GetBody()
		if len(bytes.TrimSpace(yaml)) == 0 {
			err = fmt.Errorf("%s is empty; send the whole agent.yaml", ConfigKey)
		}
	}
	if err == nil {
		err = c.o.Applier.ApplyRemote(ctx, yaml)
	}
	if err != nil {
		c.log.Error("remote config rejected; the running config is kept", slog.String("error", err.Error()))
		c.setRemote(rc.GetConfigHash(), protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, err.Error())
		return
	}
	if yaml == nil {
		err = c.o.Store.Remove()
		c.mu.Lock()
		c.applied = nil
		c.mu.Unlock()
	} else {
		err = c.o.Store.Save(Remote{Hash: rc.GetConfigHash(), YAML: yaml, AppliedAt: c.o.Now()})
		c.mu.Lock()
		c.applied = rc.GetConfigHash()
		c.mu.Unlock()
	}
	if err != nil {
		// Applied, but a restart would go back to the previous config.
		c.log.Error("remote config applied but not saved for the next start", slog.String("error", err.Error()))
	}
	c.setRemote(rc.GetConfigHash(), protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, "")
	c.log.Info("remote config applied", "opamp_config_hash", fmt.Sprintf("%x", rc.GetConfigHash()))
	c.withClient(func(cl opamp.OpAMPClient) error {
		if err := cl.SetAgentDescription(c.description()); err != nil {
			return err
		}
		return cl.UpdateEffectiveConfig(ctx)
	})
}

func (c *Client) setRemote(hash []byte, st protobufs.RemoteConfigStatuses, msg string) {
	s := &protobufs.RemoteConfigStatus{LastRemoteConfigHash: hash, Status: st, ErrorMessage: msg}
	c.mu.Lock()
	c.remote = s
	c.mu.Unlock()
	c.withClient(func(cl opamp.OpAMPClient) error { return cl.SetRemoteConfigStatus(s) })
}

// command handles the server's commands; only restart exists in OpAMP.
func (c *Client) command(cmd *protobufs.ServerToAgentCommand) error {
	if cmd.GetType() != protobufs.CommandType_CommandType_Restart {
		return fmt.Errorf("unknown command %v", cmd.GetType())
	}
	if c.o.Restart == nil {
		c.log.Warn("the OpAMP server asked for a restart; this platform cannot restart the agent in place, so it runs on")
		return errors.New("restart is not supported on this platform")
	}
	c.mu.Lock()
	again := c.restart
	c.restart = true
	c.mu.Unlock()
	if !again {
		c.log.Info("the OpAMP server asked for a restart: stopping gracefully, then starting again")
		c.o.Restart()
	}
	return nil
}

// watch reports health and the effective config when they change; the
// library's heartbeat covers the quiet times.
func (c *Client) watch(ctx context.Context) {
	t := time.NewTicker(c.o.HealthEvery)
	defer t.Stop()
	lastHash := c.o.Source.Snapshot().ConfigHash
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st := c.o.Source.Snapshot()
		h := c.healthReport(st)
		c.mu.Lock()
		changed := !sameHealth(c.health, h)
		if changed {
			c.health = h
		}
		c.mu.Unlock()
		if changed {
			c.withClient(func(cl opamp.OpAMPClient) error { return cl.SetHealth(h) })
		}
		if st.ConfigHash != lastHash {
			// A SIGHUP reload, or a remote config: the description names
			// the input paths and the output endpoint.
			lastHash = st.ConfigHash
			c.withClient(func(cl opamp.OpAMPClient) error {
				if err := cl.SetAgentDescription(c.description()); err != nil {
					return err
				}
				return cl.UpdateEffectiveConfig(ctx)
			})
		}
	}
}

// healthReport is agent.Status.Health in OpAMP's terms.
func (c *Client) healthReport(st agent.Status) *protobufs.ComponentHealth {
	h := st.Health(c.o.Now(), c.o.StallAfter)
	now := uint64(c.o.Now().UnixNano())
	var started uint64
	if !st.StartedAt.IsZero() {
		started = uint64(st.StartedAt.UnixNano())
	}
	out := &protobufs.ComponentHealth{Healthy: h.Healthy, LastError: h.Reason, Status: st.State,
		StartTimeUnixNano: started, StatusTimeUnixNano: now, ComponentHealthMap: map[string]*protobufs.ComponentHealth{}}
	for name, ch := range h.Components {
		out.ComponentHealthMap[name] = &protobufs.ComponentHealth{Healthy: ch.Healthy, Status: ch.Status,
			LastError: ch.LastError, StartTimeUnixNano: started, StatusTimeUnixNano: now}
	}
	return out
}

// sameHealth compares what a reader of the report would see, not when it
// was observed.
func sameHealth(a, b *protobufs.ComponentHealth) bool {
	if a.GetHealthy() != b.GetHealthy() || a.GetStatus() != b.GetStatus() || a.GetLastError() != b.GetLastError() ||
		len(a.GetComponentHealthMap()) != len(b.GetComponentHealthMap()) {
		return false
	}
	for name, x := range a.GetComponentHealthMap() {
		y, ok := b.GetComponentHealthMap()[name]
		if !ok || !sameHealth(x, y) {
			return false
		}
	}
	return true
}

func (c *Client) description() *protobufs.AgentDescription {
	d := c.o.Describe()
	kv := func(k, v string) *protobufs.KeyValue {
		return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
	}
	paths := make([]*protobufs.AnyValue, 0, len(d.InputPaths))
	for _, p := range d.InputPaths {
		paths = append(paths, &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: p}})
	}
	return &protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{
			kv("service.name", "edge-agent"),
			kv("service.instance.id", c.o.InstanceUID.String()),
			kv("service.version", d.Version),
		},
		NonIdentifyingAttributes: []*protobufs.KeyValue{
			kv("host.name", d.HostName),
			kv("os.type", d.OS),
			kv("host.arch", d.Arch),
			kv("edge_agent.agent_id", d.AgentID),
			{Key: "edge_agent.input.paths", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_ArrayValue{ArrayValue: &protobufs.ArrayValue{Values: paths}}}},
			kv("edge_agent.output.endpoint", d.OutputEndpoint),
		},
	}
}

// libLogger sends opamp-go's messages to the agent's log: its errors at
// DEBUG, since the client reports connection trouble itself (once, with
// the retry delay) rather than at every attempt.
type libLogger struct{ log *slog.Logger }

func (l *libLogger) Debugf(_ context.Context, format string, v ...any) {
	l.log.Debug("opamp: " + fmt.Sprintf(format, v...))
}

func (l *libLogger) Errorf(_ context.Context, format string, v ...any) {
	l.log.Debug("opamp: " + fmt.Sprintf(format, v...))
}
