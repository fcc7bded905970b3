package management

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/starter/opampdev"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// fakeAgent stands for the running agent: a status to report and an
// applier that accepts configs starting "good" and refuses the others.
type fakeAgent struct {
	mu      sync.Mutex
	st      agent.Status
	applied [][]byte
}

func (f *fakeAgent) Snapshot() agent.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeAgent) set(change func(*agent.Status)) {
	f.mu.Lock()
	change(&f.st)
	f.mu.Unlock()
}

func (f *fakeAgent) ApplyRemote(_ context.Context, yaml []byte) error {
	if !bytes.HasPrefix(yaml, []byte("good")) {
		return errors.New("remote agent.yaml:1:1: input: input must be defined")
	}
	f.mu.Lock()
	f.applied = append(f.applied, yaml)
	f.st.ConfigHash = string(yaml)
	f.mu.Unlock()
	return nil
}

const waitFor = 20 * time.Second

type fixture struct {
	srv    *opampdev.Server
	fake   *fakeAgent
	client *Client
	store  Store
	uid    identity.InstanceUID
	opts   Options
}

func newFixture(t *testing.T, change func(*Options)) *fixture {
	t.Helper()
	srv, err := opampdev.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	f := &fixture{srv: srv, fake: &fakeAgent{st: agent.Status{State: "running", Connection: "connected", ConfigHash: "h0"}}}
	f.uid, err = identity.LoadInstanceUID(filepath.Join(t.TempDir(), "uid"))
	if err != nil {
		t.Fatal(err)
	}
	f.store = Store{Path: filepath.Join(t.TempDir(), "remote.json")}
	f.opts = Options{
		Settings:    OpAMPSettings{Endpoint: srv.Endpoint(), HeartbeatInterval: 50 * time.Millisecond, AcceptRemoteConfig: true},
		InstanceUID: f.uid,
		Source:      f.fake,
		Describe: func() Description {
			return Description{Version: "1.2.3", AgentID: "agent-1", HostName: "h", OS: "linux", Arch: "amd64",
				InputPaths: []string{"/var/log/*.log"}, OutputEndpoint: "127.0.0.1:9999"}
		},
		EffectiveConfig: func() []byte { return []byte("output:\n  token: <redacted>\n") },
		Applier:         f.fake,
		Store:           f.store,
		Backoff:         backoff.Policy{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		Logger:          slog.New(slog.DiscardHandler),
		HealthEvery:     10 * time.Millisecond,
	}
	if change != nil {
		change(&f.opts)
	}
	return f
}

func (f *fixture) start(t *testing.T) {
	t.Helper()
	c, err := Start(context.Background(), f.opts)
	if err != nil {
		t.Fatal(err)
	}
	f.client = c
	t.Cleanup(c.Close)
}

func (f *fixture) wait(t *testing.T, what string, cond func(opampdev.Agent) bool) opampdev.Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var got opampdev.Agent
	err := f.srv.Wait(ctx, func(as []opampdev.Agent) bool {
		for _, a := range as {
			if a.InstanceUID == f.uid.String() && cond(a) {
				got = a
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("%s: %v; the server has %+v", what, err, f.srv.Agents())
	}
	return got
}

func TestRegistersWithDescriptionHealthAndCapabilities(t *testing.T) {
	f := newFixture(t, nil)
	f.start(t)
	a := f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Identifying != nil && a.Health != nil && a.EffectiveConfig != "" })
	want := map[string]string{"service.name": "edge-agent", "service.instance.id": f.uid.String(), "service.version": "1.2.3"}
	for k, v := range want {
		if a.Identifying[k] != v {
			t.Errorf("identifying %s = %q, want %q", k, a.Identifying[k], v)
		}
	}
	if a.NonIdentifying["edge_agent.input.paths"] != "/var/log/*.log" || a.NonIdentifying["edge_agent.output.endpoint"] != "127.0.0.1:9999" ||
		a.NonIdentifying["host.name"] != "h" || a.NonIdentifying["edge_agent.agent_id"] != "agent-1" {
		t.Errorf("non-identifying %v", a.NonIdentifying)
	}
	caps := protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth | protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat |
		protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig | protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig
	if a.Capabilities != caps {
		t.Errorf("capabilities %v, want %v (no restart: Options.Restart is nil)", a.Capabilities, caps)
	}
	if !a.Health.GetHealthy() || len(a.Health.GetComponentHealthMap()) != 3 {
		t.Errorf("health %v", a.Health)
	}
	// Heartbeats keep coming while nothing changes.
	n := a.Messages
	f.wait(t, "three more heartbeats", func(a opampdev.Agent) bool { return a.Messages >= n+3 })

	// A change of health is reported, with the failing component.
	f.fake.set(func(s *agent.Status) { s.Connection, s.LastError = "auth_failed", "AUTH_FAILED" })
	a = f.wait(t, "unhealthy", func(a opampdev.Agent) bool { return a.Healthy() == "unhealthy" })
	if out := a.Health.GetComponentHealthMap()[agent.ComponentOutput]; out.GetHealthy() || !strings.Contains(out.GetLastError(), "AUTH_FAILED") {
		t.Errorf("output health %v", out)
	}
	if st := f.client.Status(); !st.Connected || st.InstanceUID != f.uid.String() {
		t.Errorf("status %+v", st)
	}
}

// While the WAL's bounds drop unsent rows the agent stays healthy and
// says so in its OpAMP health: "degraded: dropping", the wal component
// "dropping"; once the episode is over the report is plain healthy again.
func TestHealthReportsDropping(t *testing.T) {
	f := newFixture(t, nil)
	f.start(t)
	f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Health != nil && a.Health.GetLastError() == "" })
	f.fake.set(func(s *agent.Status) { s.Drops = agent.DropStatus{FullRows: 10, FullBytes: 1000, Dropping: true} })
	a := f.wait(t, "degraded: dropping", func(a opampdev.Agent) bool { return a.Health.GetLastError() == agent.DegradedDropping })
	if !a.Health.GetHealthy() || a.Healthy() != "healthy" {
		t.Errorf("health %v while dropping, want healthy", a.Health)
	}
	if w := a.Health.GetComponentHealthMap()[agent.ComponentWAL]; !w.GetHealthy() || w.GetStatus() != "dropping" {
		t.Errorf("wal health %v, want healthy and dropping", w)
	}
	f.fake.set(func(s *agent.Status) { s.Drops.Dropping = false })
	a = f.wait(t, "dropping over", func(a opampdev.Agent) bool { return a.Health.GetLastError() == "" })
	if w := a.Health.GetComponentHealthMap()[agent.ComponentWAL]; w.GetStatus() != "writable" {
		t.Errorf("wal health %v after the episode, want writable", w)
	}
}

func TestRemoteConfigAppliedPersistedOrFailed(t *testing.T) {
	f := newFixture(t, nil)
	f.start(t)
	f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Identifying != nil })

	hash := f.srv.Push([]byte("good: 1\n"))
	f.wait(t, "APPLIED", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "APPLIED" && bytes.Equal(a.RemoteConfig.GetLastRemoteConfigHash(), hash)
	})
	saved, err := f.store.Load()
	if err != nil || saved == nil || string(saved.YAML) != "good: 1\n" || !bytes.Equal(saved.Hash, hash) {
		t.Fatalf("persisted %+v %v", saved, err)
	}

	bad := f.srv.Push([]byte("broken: 1\n"))
	a := f.wait(t, "FAILED", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "FAILED" && bytes.Equal(a.RemoteConfig.GetLastRemoteConfigHash(), bad)
	})
	if !strings.Contains(a.RemoteConfig.GetErrorMessage(), "remote agent.yaml:1:1") {
		t.Errorf("error message %q", a.RemoteConfig.GetErrorMessage())
	}
	if saved, _ := f.store.Load(); string(saved.YAML) != "good: 1\n" {
		t.Fatalf("a failed config replaced the saved one: %q", saved.YAML)
	}
	if len(f.fake.applied) != 1 {
		t.Fatalf("applied %d configs, want 1", len(f.fake.applied))
	}
}

func TestNoRemoteConfigCapabilityWhenRefused(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Applier = nil; o.Restart = func() {} })
	f.start(t)
	a := f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Capabilities != 0 })
	if a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig != 0 {
		t.Fatalf("capabilities %v announce remote configs", a.Capabilities)
	}
	if a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_AcceptsRestartCommand == 0 {
		t.Fatalf("capabilities %v lack the restart it implements", a.Capabilities)
	}
}

func TestRestartCommand(t *testing.T) {
	restarted := make(chan struct{}, 4)
	f := newFixture(t, func(o *Options) { o.Restart = func() { restarted <- struct{}{} } })
	f.start(t)
	f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Connected })
	if err := f.srv.Restart(f.uid.String()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-restarted:
	case <-time.After(waitFor):
		t.Fatal("the restart command did not reach Options.Restart")
	}
}

// The server is down when the agent starts: Start returns at once, and
// the agent registers once the server listens.
func TestRegistersWhenTheServerComesBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f := newFixture(t, func(o *Options) { o.Settings.Endpoint = "ws://" + addr + opampdev.Path })
	f.start(t)
	if f.client.Status().Connected {
		t.Fatal("connected with no server")
	}
	srv, err := opampdev.Start(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	f.srv = srv
	f.wait(t, "registered after the server came up", func(a opampdev.Agent) bool { return a.Connected && a.Identifying != nil })
}

// Over plain HTTP the agent polls at the heartbeat interval; the same
// registration and remote config work.
func TestHTTPPolling(t *testing.T) {
	f := newFixture(t, nil)
	f.opts.Settings.Endpoint = "http://" + f.srv.Addr() + opampdev.Path
	f.start(t)
	a := f.wait(t, "registered over HTTP", func(a opampdev.Agent) bool { return a.Identifying != nil && a.Health != nil })
	n := a.Messages
	f.wait(t, "three more polls", func(a opampdev.Agent) bool { return a.Messages >= n+3 })
	hash := f.srv.Push([]byte("good: http\n"))
	f.wait(t, "APPLIED over HTTP", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "APPLIED" && bytes.Equal(a.RemoteConfig.GetLastRemoteConfigHash(), hash)
	})
}

// A server that goes away and comes back (a restart of the fleet
// manager) sees the agent again, with its full state.
func TestReconnectsAfterTheServerRestarts(t *testing.T) {
	f := newFixture(t, nil)
	f.start(t)
	f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Connected && a.Identifying != nil })
	addr := f.srv.Addr()
	if err := f.srv.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := opampdev.Start(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	f.srv = srv
	f.wait(t, "registered with the new server, description and health included", func(a opampdev.Agent) bool {
		return a.Connected && a.Identifying != nil && a.Health != nil
	})
}

// An empty config map withdraws the remote config: the agent goes back to
// its local file (Applier gets nil) and forgets the saved one.
func TestWithdrawnConfigGoesBackToTheLocalFile(t *testing.T) {
	f := newFixture(t, nil)
	var withdrawn atomic.Bool
	applier := applierFunc(func(ctx context.Context, yaml []byte) error {
		if yaml == nil {
			withdrawn.Store(true)
			return nil
		}
		return f.fake.ApplyRemote(ctx, yaml)
	})
	f.opts.Applier = applier
	f.start(t)
	hash := f.srv.Push([]byte("good: 1\n"))
	f.wait(t, "APPLIED", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "APPLIED" && bytes.Equal(a.RemoteConfig.GetLastRemoteConfigHash(), hash)
	})
	empty := f.srv.Withdraw()
	f.wait(t, "the withdrawal APPLIED", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "APPLIED" && bytes.Equal(a.RemoteConfig.GetLastRemoteConfigHash(), empty)
	})
	if !withdrawn.Load() {
		t.Fatal("the Applier was not told to go back to the local file")
	}
	if saved, err := f.store.Load(); err != nil || saved != nil {
		t.Fatalf("the saved remote config is still there: %+v %v", saved, err)
	}
}

type applierFunc func(context.Context, []byte) error

func (f applierFunc) ApplyRemote(ctx context.Context, yaml []byte) error { return f(ctx, yaml) }
