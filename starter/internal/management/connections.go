package management

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// EdgeSocketConnection is the other_connections key whose settings are
// the output's: the engine's EdgeSocket endpoint, token and TLS.
const EdgeSocketConnection = "edgesocket"

// EdgeSocketOffer is the server's edgesocket connection settings, read
// from OpAMP's OtherConnectionSettings:
//   - destination_endpoint is output.endpoint (host:port; an
//     edgesocket:// or tcp:// prefix is dropped);
//   - the token is other_settings["token"], or else an
//     "Authorization: Bearer <token>" header;
//   - certificate.cert and private_key are the client certificate
//     (output.tls.cert-file and key-file), certificate.ca_cert the CA
//     that verifies the engine (output.tls.ca-file); any of them turns
//     TLS on.
//
// An offer with none of them withdraws the settings: the output goes back
// to the config's own.
type EdgeSocketOffer struct {
	// Hash is the server's hash of all its connection settings.
	Hash     []byte
	Endpoint string
	Token    string
	// Cert, Key and CA are PEM.
	Cert, Key, CA []byte
}

// Withdraw reports an offer that sets nothing.
func (o EdgeSocketOffer) Withdraw() bool {
	return o.Endpoint == "" && o.Token == "" && len(o.Cert) == 0 && len(o.Key) == 0 && len(o.CA) == 0
}

// ConnectionApplier puts the server's edgesocket settings in force through
// the reload path, checks that the engine takes them (within a deadline),
// goes back to the previous ones when it does not, and keeps them for the
// next start once it does. The error says why they were refused.
type ConnectionApplier interface {
	ApplyEdgeSocket(ctx context.Context, offer EdgeSocketOffer) error
}

// edgeSocketOffer reads the settings; a malformed offer is an error.
func edgeSocketOffer(hash []byte, s *protobufs.OtherConnectionSettings) (EdgeSocketOffer, error) {
	o := EdgeSocketOffer{Hash: hash, Endpoint: strings.TrimSpace(s.GetDestinationEndpoint())}
	for _, prefix := range []string{"edgesocket://", "tcp://"} {
		o.Endpoint = strings.TrimPrefix(o.Endpoint, prefix)
	}
	for k, v := range s.GetOtherSettings() {
		switch k {
		case "token":
			o.Token = v
		default:
			return o, fmt.Errorf("other_connections[%q].other_settings[%q] is not known; the agent takes \"token\"", EdgeSocketConnection, k)
		}
	}
	if o.Token == "" {
		for _, h := range s.GetHeaders().GetHeaders() {
			if strings.EqualFold(h.GetKey(), "Authorization") {
				tok, ok := strings.CutPrefix(h.GetValue(), "Bearer ")
				if !ok {
					return o, fmt.Errorf("other_connections[%q]: the Authorization header must be \"Bearer <token>\"", EdgeSocketConnection)
				}
				o.Token = strings.TrimSpace(tok)
			}
		}
	}
	if c := s.GetCertificate(); c != nil {
		o.Cert, o.Key, o.CA = c.GetCert(), c.GetPrivateKey(), c.GetCaCert()
		if (len(o.Cert) == 0) != (len(o.Key) == 0) {
			return o, fmt.Errorf("other_connections[%q].certificate needs both cert and private_key", EdgeSocketConnection)
		}
	}
	return o, nil
}

// OwnLogsApplier ships the agent's own logs to an OTLP/HTTP logs
// endpoint (own_logs); an empty endpoint stops shipping.
type OwnLogsApplier interface {
	Apply(endpoint string, headers map[string]string) error
}

// onConnectionSettings takes the non-OpAMP connection settings:
// other_connections["edgesocket"] and own_logs. own_metrics and
// own_traces are not advertised, so the library never hands them over.
func (c *Client) onConnectionSettings(ctx context.Context, offers *protobufs.ConnectionSettingsOffers) error {
	others := offers.GetOtherConnections()
	own := offers.GetOwnLogs()
	if len(others) == 0 && own == nil {
		return nil
	}
	if len(others) > 0 && c.o.Connections == nil {
		return errors.New("this agent takes no other connection settings")
	}
	c.mu.Lock()
	last := c.connStatus
	c.mu.Unlock()
	if last != nil && bytes.Equal(last.GetLastConnectionSettingsHash(), offers.GetHash()) &&
		last.GetStatus() == protobufs.ConnectionSettingsStatuses_ConnectionSettingsStatuses_FAILED {
		// The same offer again (a reconnection): its fate stands.
		return errors.New(last.GetErrorMessage())
	}
	var errs []error
	if own != nil {
		errs = append(errs, c.applyOwnLogs(own))
	}
	for _, name := range slices.Sorted(maps.Keys(others)) {
		if name != EdgeSocketConnection {
			errs = append(errs, fmt.Errorf("other_connections[%q] is not known; the agent takes %q (its output)", name, EdgeSocketConnection))
		}
	}
	if s, ok := others[EdgeSocketConnection]; ok {
		o, err := edgeSocketOffer(offers.GetHash(), s)
		if err == nil {
			c.log.Info("the OpAMP server offered edgesocket connection settings", "endpoint", o.Endpoint,
				"token_set", o.Token != "", "client_certificate", len(o.Cert) > 0, "ca", len(o.CA) > 0)
			err = c.o.Connections.ApplyEdgeSocket(ctx, o)
		}
		if err != nil {
			c.log.Error("edgesocket connection settings refused; the output keeps its settings", "error", err.Error())
			errs = append(errs, err)
		} else {
			c.log.Info("edgesocket connection settings applied", "endpoint", o.Endpoint)
		}
	}
	err := errors.Join(errs...)
	st := &protobufs.ConnectionSettingsStatus{LastConnectionSettingsHash: offers.GetHash(),
		Status: protobufs.ConnectionSettingsStatuses_ConnectionSettingsStatuses_APPLIED}
	if err != nil {
		st.Status, st.ErrorMessage = protobufs.ConnectionSettingsStatuses_ConnectionSettingsStatuses_FAILED, err.Error()
	}
	c.mu.Lock()
	c.connStatus = st
	c.mu.Unlock()
	return err
}

// applyOwnLogs hands the own_logs offer to Options.OwnLogs: an OTLP/HTTP
// logs endpoint and its headers (no client certificate).
func (c *Client) applyOwnLogs(s *protobufs.TelemetryConnectionSettings) error {
	if c.o.OwnLogs == nil {
		return errors.New("own_logs: this agent does not ship its own logs")
	}
	if s.GetCertificate() != nil || s.GetTls() != nil || s.GetProxy() != nil {
		return errors.New("own_logs: certificate, tls and proxy settings are not supported; offer an endpoint and headers")
	}
	headers := map[string]string{}
	for _, h := range s.GetHeaders().GetHeaders() {
		headers[h.GetKey()] = h.GetValue()
	}
	if err := c.o.OwnLogs.Apply(s.GetDestinationEndpoint(), headers); err != nil {
		c.log.Error("own_logs connection settings refused", "error", err.Error())
		return err
	}
	if s.GetDestinationEndpoint() == "" {
		c.log.Info("own logs no longer shipped: the OpAMP server withdrew own_logs")
		return nil
	}
	c.log.Info("own logs shipped where the OpAMP server's own_logs says", "endpoint", s.GetDestinationEndpoint(), "headers", len(headers))
	return nil
}
