// Package opampdev is a small OpAMP server on opamp-go/server: it keeps
// what each agent reported (description, health, remote config status,
// effective config, message count) and offers one agent.yaml to every
// agent. opamp-devserver is built on it, and so are the tests of the
// agent's management: one stand-in, like edgesocket-receiver for the
// engine. It is a tool for trying and testing, not a fleet manager.
package opampdev

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
)

// Path is where the server listens for OpAMP (the specification's default).
const Path = "/v1/opamp"

// Agent is what the server knows of one agent.
type Agent struct {
	InstanceUID  string
	Connected    bool
	Messages     int // AgentToServer messages received (heartbeats included)
	LastSeen     time.Time
	Capabilities protobufs.AgentCapabilities
	// Attributes are the description's, identifying and not (arrays
	// joined with commas).
	Identifying, NonIdentifying map[string]string
	Health                      *protobufs.ComponentHealth
	RemoteConfig                *protobufs.RemoteConfigStatus
	// EffectiveConfig is the agent.yaml entry of the effective config.
	EffectiveConfig string
	// Packages is the last package status report.
	Packages *protobufs.PackageStatuses
	// CustomCapabilities are those the agent advertised.
	CustomCapabilities []string
	// Connections is the status of the last connection settings offered.
	Connections *protobufs.ConnectionSettingsStatus
}

// Healthy reads the health report ("" when none arrived yet).
func (a Agent) Healthy() string {
	switch {
	case a.Health == nil:
		return ""
	case a.Health.GetHealthy():
		return "healthy"
	}
	return "unhealthy"
}

// RemoteStatus is UNSET, APPLYING, APPLIED or FAILED ("" before any).
func (a Agent) RemoteStatus() string {
	if a.RemoteConfig == nil {
		return ""
	}
	return strings.TrimPrefix(a.RemoteConfig.GetStatus().String(), "RemoteConfigStatuses_")
}

// Server is a running stand-in server.
type Server struct {
	srv  server.OpAMPServer
	addr net.Addr
	log  *slog.Logger
	now  func() time.Time

	mu     sync.Mutex
	agents map[string]*Agent
	conns  map[string]types.Connection
	offer  *protobufs.AgentRemoteConfig
	tasks  tasksState
	pkgs   packages
	// connOffer are the connection settings offered (nil: none).
	connOffer *protobufs.ConnectionSettingsOffers
	changed   chan struct{} // closed and replaced at every change
}

// Start listens on addr (host:port; port 0 picks one).
func Start(addr string, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{log: logger, now: time.Now, agents: map[string]*Agent{}, conns: map[string]types.Connection{}, changed: make(chan struct{})}
	s.srv = server.New(&libLogger{log: logger})
	err := s.srv.Start(server.StartSettings{
		ListenEndpoint: addr,
		ListenPath:     Path,
		Settings: server.Settings{Callbacks: types.Callbacks{
			OnConnecting: func(*http.Request) types.ConnectionResponse {
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
					OnMessage:         s.onMessage,
					OnConnectionClose: s.onClose,
				}}
			},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("opamp server on %s: %w", addr, err)
	}
	s.addr = s.srv.Addr()
	return s, nil
}

// Addr is the address listened on.
func (s *Server) Addr() string { return s.addr.String() }

// Endpoint is the WebSocket URL agents use (management.opamp.endpoint).
func (s *Server) Endpoint() string { return "ws://" + s.addr.String() + Path }

// Stop closes every connection and the listener. The WebSocket
// connections are closed here: the HTTP server's shutdown leaves hijacked
// connections open, and agents would go on talking to a stopped server.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	conns := make([]types.Connection, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	err := errors.Join(s.srv.Stop(ctx), s.pkgs.stop(ctx))
	for _, c := range conns {
		_ = c.Disconnect() // already gone or closed now: either way it is closed
	}
	return err
}

// Push offers yaml as agent.yaml to every agent (those connected now over
// WebSocket at once, the others at their next message). It returns the
// config hash agents report back.
func (s *Server) Push(yaml []byte) []byte {
	return s.offerMap(map[string]*protobufs.AgentConfigFile{"agent.yaml": {Body: yaml, ContentType: "text/yaml"}})
}

// Withdraw offers an empty config map: in OpAMP, the server no longer
// configures the agent, which goes back to its local file.
func (s *Server) Withdraw() []byte { return s.offerMap(map[string]*protobufs.AgentConfigFile{}) }

func (s *Server) offerMap(files map[string]*protobufs.AgentConfigFile) []byte {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(files[name].GetBody())
	}
	rc := &protobufs.AgentRemoteConfig{ConfigHash: h.Sum(nil), Config: &protobufs.AgentConfigMap{ConfigMap: files}}
	s.mu.Lock()
	s.offer = rc
	conns := make(map[string]types.Connection, len(s.conns))
	for uid, c := range s.conns {
		conns[uid] = c
	}
	s.mu.Unlock()
	for uid, c := range conns {
		raw, _ := uuid.Parse(uid)
		if err := c.Send(context.Background(), &protobufs.ServerToAgent{InstanceUid: raw[:], RemoteConfig: rc}); err != nil {
			s.log.Debug("offer not sent now; the agent gets it at its next message", "instance_uid", uid, "error", err)
		}
	}
	return rc.ConfigHash
}

// Restart sends the restart command to a connected agent.
func (s *Server) Restart(uid string) error {
	s.mu.Lock()
	c, ok := s.conns[uid]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("agent %s is not connected", uid)
	}
	raw, err := uuid.Parse(uid)
	if err != nil {
		return fmt.Errorf("instance uid %q: %w", uid, err)
	}
	return c.Send(context.Background(), &protobufs.ServerToAgent{InstanceUid: raw[:],
		Command: &protobufs.ServerToAgentCommand{Type: protobufs.CommandType_CommandType_Restart}})
}

// Agents returns a copy of what the server knows, ordered by instance uid.
func (s *Server) Agents() []Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Agent, 0, len(s.agents))
	for _, a := range s.agents {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b Agent) int { return strings.Compare(a.InstanceUID, b.InstanceUID) })
	return out
}

// Changed returns a channel closed at the next change of any agent.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Wait returns once cond holds for the agents, or ctx's error.
func (s *Server) Wait(ctx context.Context, cond func([]Agent) bool) error {
	for {
		ch := s.Changed()
		if cond(s.Agents()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return errors.Join(ctx.Err(), errors.New("waiting for the OpAMP server to see it"))
		}
	}
}

func (s *Server) onMessage(_ context.Context, conn types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	uid, err := uuid.FromBytes(msg.GetInstanceUid())
	if err != nil {
		return &protobufs.ServerToAgent{InstanceUid: msg.GetInstanceUid(), ErrorResponse: &protobufs.ServerErrorResponse{
			Type: protobufs.ServerErrorResponseType_ServerErrorResponseType_BadRequest, ErrorMessage: "instance_uid must be 16 bytes"}}
	}
	id := uid.String()
	reply := &protobufs.ServerToAgent{InstanceUid: msg.GetInstanceUid()}
	s.mu.Lock()
	a, known := s.agents[id]
	if !known {
		a = &Agent{InstanceUID: id}
		s.agents[id] = a
	}
	if msg.GetAgentDisconnect() != nil {
		a.Connected = false
		delete(s.conns, id)
	} else {
		a.Connected = true
		s.conns[id] = conn
	}
	a.Messages++
	a.LastSeen = s.now()
	if msg.GetCapabilities() != 0 {
		a.Capabilities = protobufs.AgentCapabilities(msg.GetCapabilities())
	}
	if d := msg.GetAgentDescription(); d != nil {
		a.Identifying, a.NonIdentifying = attributes(d.GetIdentifyingAttributes()), attributes(d.GetNonIdentifyingAttributes())
	} else if !known {
		// A server that restarted forgot the agent: ask for everything.
		reply.Flags = uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState)
	}
	if h := msg.GetHealth(); h != nil {
		a.Health = h
	}
	if cc := msg.GetCustomCapabilities(); cc != nil {
		a.CustomCapabilities = slices.Clone(cc.GetCapabilities())
	}
	if m := msg.GetCustomMessage(); m != nil {
		s.onCustom(m)
	}
	if cs := msg.GetConnectionSettingsStatus(); cs != nil {
		a.Connections = cs
	}
	if o := s.connOffer; o != nil && takesConnections(a.Capabilities, o) &&
		(a.Connections == nil || string(a.Connections.GetLastConnectionSettingsHash()) != string(o.GetHash())) {
		reply.ConnectionSettings = o
	}
	if rs := msg.GetRemoteConfigStatus(); rs != nil {
		a.RemoteConfig = rs
	}
	if ec := msg.GetEffectiveConfig(); ec != nil {
		if f := ec.GetConfigMap().GetConfigMap()["agent.yaml"]; f != nil {
			a.EffectiveConfig = string(f.GetBody())
		}
	}
	if ps := msg.GetPackageStatuses(); ps != nil {
		a.Packages = ps
	}
	reply.PackagesAvailable = s.pendingOffer(a)
	if s.offer != nil && a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig != 0 &&
		!hashIs(a.RemoteConfig, s.offer.GetConfigHash()) {
		reply.RemoteConfig = s.offer
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return reply
}

func (s *Server) onClose(conn types.Connection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.conns {
		if c == conn {
			delete(s.conns, id)
			if a := s.agents[id]; a != nil {
				a.Connected = false
			}
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func hashIs(st *protobufs.RemoteConfigStatus, hash []byte) bool {
	return st != nil && string(st.GetLastRemoteConfigHash()) == string(hash)
}

func attributes(kvs []*protobufs.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = anyString(kv.GetValue())
	}
	return out
}

func anyString(v *protobufs.AnyValue) string {
	if arr := v.GetArrayValue(); arr != nil {
		var parts []string
		for _, e := range arr.GetValues() {
			parts = append(parts, anyString(e))
		}
		return strings.Join(parts, ",")
	}
	if s, ok := v.GetValue().(*protobufs.AnyValue_StringValue); ok {
		return s.StringValue
	}
	return fmt.Sprint(v.GetValue())
}

// libLogger hands opamp-go's messages to slog at DEBUG.
type libLogger struct{ log *slog.Logger }

func (l *libLogger) Debugf(_ context.Context, format string, v ...any) {
	l.log.Debug("opamp: " + fmt.Sprintf(format, v...))
}

func (l *libLogger) Errorf(_ context.Context, format string, v ...any) {
	l.log.Debug("opamp: " + fmt.Sprintf(format, v...))
}
