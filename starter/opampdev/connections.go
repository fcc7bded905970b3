package opampdev

import (
	"context"
	"crypto/sha256"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"
)

// ConnectionStatus is UNSET, APPLYING, APPLIED or FAILED ("" before any).
func (a Agent) ConnectionStatus() string {
	if a.Connections == nil {
		return ""
	}
	return strings.TrimPrefix(a.Connections.GetStatus().String(), "ConnectionSettingsStatuses_")
}

// EdgeSocket are the edgesocket connection settings the agent takes for
// its output (other_connections["edgesocket"]).
type EdgeSocket struct {
	Endpoint, Token string
	// Cert and Key are a PEM client certificate and key, CA a PEM CA.
	Cert, Key, CA []byte
}

// OfferEdgeSocket offers e to every agent that accepts other connection
// settings (those connected now at once, the others at their next
// message, and again to any whose last status names another offer). It
// returns the offer's hash.
func (s *Server) OfferEdgeSocket(e EdgeSocket) []byte {
	set := &protobufs.OtherConnectionSettings{DestinationEndpoint: e.Endpoint}
	if e.Token != "" {
		set.OtherSettings = map[string]string{"token": e.Token}
	}
	if len(e.Cert) > 0 || len(e.Key) > 0 || len(e.CA) > 0 {
		set.Certificate = &protobufs.TLSCertificate{Cert: e.Cert, PrivateKey: e.Key, CaCert: e.CA}
	}
	return s.OfferConnections(&protobufs.ConnectionSettingsOffers{
		OtherConnections: map[string]*protobufs.OtherConnectionSettings{"edgesocket": set}})
}

// OfferOwnLogs offers every agent that reports its own logs an OTLP/HTTP
// logs endpoint (own_logs) and headers; "" withdraws it. It returns the
// offer's hash.
func (s *Server) OfferOwnLogs(endpoint string, headers map[string]string) []byte {
	set := &protobufs.TelemetryConnectionSettings{DestinationEndpoint: endpoint}
	if len(headers) > 0 {
		set.Headers = &protobufs.Headers{}
		for _, k := range slices.Sorted(maps.Keys(headers)) {
			set.Headers.Headers = append(set.Headers.Headers, &protobufs.Header{Key: k, Value: headers[k]})
		}
	}
	return s.OfferConnections(&protobufs.ConnectionSettingsOffers{OwnLogs: set})
}

// OfferHeartbeatSeconds is the heartbeat interval OfferOpAMP sends with
// the settings: opamp-go clients take the offer's interval as theirs, and
// 0 would turn their heartbeats off.
const OfferHeartbeatSeconds = 1

// OfferOpAMP offers the agents a new way to reach their OpAMP server:
// endpoint, headers, and a PEM CA (ca) and client certificate.
func (s *Server) OfferOpAMP(endpoint string, headers map[string]string, ca, cert, key []byte) []byte {
	set := &protobufs.OpAMPConnectionSettings{DestinationEndpoint: endpoint, HeartbeatIntervalSeconds: OfferHeartbeatSeconds}
	if len(headers) > 0 {
		set.Headers = &protobufs.Headers{}
		for k, v := range headers {
			set.Headers.Headers = append(set.Headers.Headers, &protobufs.Header{Key: k, Value: v})
		}
	}
	if len(ca) > 0 || len(cert) > 0 || len(key) > 0 {
		set.Certificate = &protobufs.TLSCertificate{Cert: cert, PrivateKey: key, CaCert: ca}
	}
	return s.OfferConnections(&protobufs.ConnectionSettingsOffers{Opamp: set})
}

// OfferConnections offers any connection settings; the hash is computed
// here from their content.
func (s *Server) OfferConnections(o *protobufs.ConnectionSettingsOffers) []byte {
	o = proto.Clone(o).(*protobufs.ConnectionSettingsOffers)
	o.Hash = nil
	raw, _ := proto.MarshalOptions{Deterministic: true}.Marshal(o) // a built message marshals
	sum := sha256.Sum256(raw)
	o.Hash = sum[:]
	s.mu.Lock()
	s.connOffer = o
	conns := make(map[string]*Agent, len(s.conns))
	for uid := range s.conns {
		conns[uid] = s.agents[uid]
	}
	send := map[string]func() error{}
	for uid, a := range conns {
		if a == nil || !takesConnections(a.Capabilities, o) {
			continue
		}
		c := s.conns[uid]
		raw, _ := uuid.Parse(uid)
		send[uid] = func() error {
			return c.Send(context.Background(), &protobufs.ServerToAgent{InstanceUid: raw[:], ConnectionSettings: o})
		}
	}
	s.mu.Unlock()
	for uid, f := range send {
		if err := f(); err != nil {
			s.log.Debug("connection settings not sent now; the agent gets them at its next message", "instance_uid", uid, "error", err)
		}
	}
	return o.Hash
}

// takesConnections: the agent advertised what the offer holds.
func takesConnections(caps protobufs.AgentCapabilities, o *protobufs.ConnectionSettingsOffers) bool {
	return o.GetOpamp() != nil && caps&protobufs.AgentCapabilities_AgentCapabilities_AcceptsOpAMPConnectionSettings != 0 ||
		len(o.GetOtherConnections()) > 0 && caps&protobufs.AgentCapabilities_AgentCapabilities_AcceptsOtherConnectionSettings != 0 ||
		o.GetOwnLogs() != nil && caps&protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnLogs != 0
}
