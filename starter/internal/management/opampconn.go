package management

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	opamp "github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/edge-agent/edge-agent/starter/internal/connfiles"
)

// OpAMPConnectTimeout is how long new OpAMP connection settings have to
// connect before they are given up and the connection in force kept.
const OpAMPConnectTimeout = 15 * time.Second

// OpAMPStore keeps the OpAMP connection settings the server set, once
// they connected: one JSON file (mode 0600: headers are secrets) and the
// PEM files it names, in Dir. At start they replace management.opamp's
// endpoint, headers and TLS files; deleting the file goes back to them.
type OpAMPStore struct{ Dir string }

// savedOpAMP is the file's form.
type savedOpAMP struct {
	Hash      string            `json:"opamp_connection_settings_hash"`
	Endpoint  string            `json:"endpoint"`
	Headers   map[string]string `json:"headers,omitempty"`
	CAFile    string            `json:"ca_file,omitempty"`
	CertFile  string            `json:"cert_file,omitempty"`
	KeyFile   string            `json:"key_file,omitempty"`
	AppliedAt time.Time         `json:"applied_at"`
}

// opampKind names the OpAMP connection's files in the connections folder.
const opampKind = "opamp"

func (s OpAMPStore) load() (*savedOpAMP, error) {
	v, err := connfiles.Load(s.Dir, opampKind, func(v *savedOpAMP) bool { return v.Endpoint != "" })
	if errors.Is(err, connfiles.ErrCorrupt) {
		err = fmt.Errorf("%w: the saved OpAMP connection settings: %w (delete it to use management.opamp)", ErrCorruptRemote, err)
	}
	return v, err
}

// over returns settings with v's endpoint, headers and TLS files.
func (v savedOpAMP) over(s OpAMPSettings) OpAMPSettings {
	s.Endpoint = v.Endpoint
	h := maps.Clone(s.Headers)
	if h == nil {
		h = map[string]string{}
	}
	maps.Copy(h, v.Headers)
	s.Headers = h
	s.TLS.Enabled = strings.HasPrefix(v.Endpoint, "wss://") || strings.HasPrefix(v.Endpoint, "https://")
	if v.CAFile != "" {
		s.TLS.CAFile = v.CAFile
	}
	if v.CertFile != "" {
		s.TLS.CertFile, s.TLS.KeyFile = v.CertFile, v.KeyFile
	}
	return s
}

// stage writes the offer's PEM files under names of its hash and returns
// the settings it makes.
func (s OpAMPStore) stage(hash []byte, o *protobufs.OpAMPConnectionSettings, cur OpAMPSettings) (savedOpAMP, error) {
	v := savedOpAMP{Hash: hex.EncodeToString(hash), Endpoint: strings.TrimSpace(o.GetDestinationEndpoint())}
	if v.Endpoint == "" {
		v.Endpoint = cur.Endpoint
	}
	for _, h := range o.GetHeaders().GetHeaders() {
		if v.Headers == nil {
			v.Headers = map[string]string{}
		}
		v.Headers[h.GetKey()] = h.GetValue()
	}
	c := o.GetCertificate()
	if (len(c.GetCert()) == 0) != (len(c.GetPrivateKey()) == 0) {
		return v, errors.New("opamp.certificate needs both cert and private_key")
	}
	err := connfiles.Stage(s.Dir, opampKind, v.Hash,
		connfiles.PEM{Data: c.GetCaCert(), Name: "ca.pem", Path: &v.CAFile},
		connfiles.PEM{Data: c.GetCert(), Name: "cert.pem", Path: &v.CertFile},
		connfiles.PEM{Data: c.GetPrivateKey(), Name: "key.pem", Path: &v.KeyFile})
	if err != nil {
		return v, fmt.Errorf("OpAMP connection settings: %w", err)
	}
	return v, nil
}

func (s OpAMPStore) save(v savedOpAMP) error {
	return connfiles.Save(s.Dir, opampKind, v, v.CAFile, v.CertFile, v.KeyFile)
}

// prune removes the staged PEM files keep does not name.
func (s OpAMPStore) prune(keep savedOpAMP) {
	connfiles.Prune(s.Dir, opampKind, keep.CAFile, keep.CertFile, keep.KeyFile)
}

// swap is a session that connected with new settings, for supervise to
// take over from the one in force.
type swap struct {
	cl       opamp.OpAMPClient
	events   chan event
	settings OpAMPSettings
}

// onOpAMPSettings follows the OpAMP rule: a client with the new settings
// connects beside the one in force, which is kept until the new one is
// connected (within OpAMPConnectTimeout); then supervise switches to it
// and the settings are saved. A failure leaves everything as it was and
// is reported FAILED on the connection in force.
func (c *Client) onOpAMPSettings(ctx context.Context, o *protobufs.OpAMPConnectionSettings) error {
	c.mu.Lock()
	cur := c.settings
	hash := c.offeredHash
	c.mu.Unlock()
	if c.o.OpAMPStore == nil {
		return errors.New("this agent takes no OpAMP connection settings")
	}
	if o.GetDestinationEndpoint() == "" && len(o.GetHeaders().GetHeaders()) == 0 && o.GetCertificate() == nil {
		return nil // a heartbeat interval alone: the library applied it
	}
	store := *c.o.OpAMPStore
	v, err := store.stage(hash, o, cur)
	if err != nil {
		return err
	}
	next := v.over(cur)
	if err := (Settings{OpAMP: next}).Validate(); err != nil {
		store.prune(c.savedOpAMP())
		return fmt.Errorf("the offered OpAMP connection settings are invalid: %w", err)
	}
	c.log.Info("the OpAMP server offered new connection settings; connecting with them beside the current connection",
		"new_endpoint", next.Endpoint, "headers", len(v.Headers), "client_certificate", v.CertFile != "")
	// The new session reports the settings APPLIED as it connects, which
	// is when they are.
	c.setConnStatus(hash, protobufs.ConnectionSettingsStatuses_ConnectionSettingsStatuses_APPLIED, "")
	events := make(chan event, 8)
	cl, err := c.startSession(ctx, events, next, false)
	if err == nil {
		err = waitConnected(ctx, events, OpAMPConnectTimeout)
		if err != nil {
			c.endSession(cl, false)
		}
	}
	if err != nil {
		c.setConnStatus(hash, protobufs.ConnectionSettingsStatuses_ConnectionSettingsStatuses_FAILED, err.Error())
		store.prune(c.savedOpAMP())
		c.log.Error("the new OpAMP connection settings did not connect; the connection in force is kept", "new_endpoint", next.Endpoint, "error", err.Error())
		return fmt.Errorf("kept the connection in force: %s did not connect: %w", next.Endpoint, err)
	}
	v.AppliedAt = time.Now().UTC()
	if err := store.save(v); err != nil {
		c.log.Error("new OpAMP connection in use but not saved for the next start", "error", err.Error())
	}
	c.mu.Lock()
	c.saved = &v
	c.mu.Unlock()
	c.swaps <- swap{cl: cl, events: events, settings: next} // buffered, one offer at a time
	return nil
}

func (c *Client) savedOpAMP() savedOpAMP {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.saved == nil {
		return savedOpAMP{}
	}
	return *c.saved
}

// waitConnected waits for a session's first connection.
func waitConnected(ctx context.Context, events <-chan event, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			switch ev.kind {
			case evConnected:
				return nil
			case evFailed:
				if ev.err == nil {
					return errors.New("the connection failed")
				}
				return ev.err
			}
		case <-t.C:
			return fmt.Errorf("not connected within %s", timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setConnStatus records the connection settings' fate for the sessions to
// come.
func (c *Client) setConnStatus(hash []byte, st protobufs.ConnectionSettingsStatuses, msg string) {
	c.mu.Lock()
	c.connStatus = &protobufs.ConnectionSettingsStatus{LastConnectionSettingsHash: hash, Status: st, ErrorMessage: msg}
	c.mu.Unlock()
}
