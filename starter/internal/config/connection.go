package config

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// OutputConnection is how the OpAMP server says to reach the engine (its
// connection settings for "edgesocket"): put over output.* of whatever
// config is in force, local or remote, until the server changes it. Empty
// fields keep the config's value.
type OutputConnection struct {
	// Endpoint is output.endpoint (host:port).
	Endpoint string
	// Token is output.token; it replaces output.token-file too.
	Token string
	// CertFile and KeyFile are output.tls.cert-file and key-file (the
	// client certificate), CAFile output.tls.ca-file; any of them turns
	// output.tls.enabled on.
	CertFile, KeyFile, CAFile string
	// ID names the settings in the config hash and the effective config
	// (the server's hash, shortened); never a secret.
	ID string
}

// WithOutputConnection returns a copy of c with oc over its output
// section, checked as the output checks itself. Only output.type
// transport takes it.
func (c *Config) WithOutputConnection(oc OutputConnection) (*Config, error) {
	tc, ok := c.Output.Options.(*output.TransportConfig)
	if !ok {
		return nil, fmt.Errorf("output.type %s takes no edgesocket connection settings (only %s does)", c.Output.Type, output.TypeTransport)
	}
	next := *tc
	if ep := strings.TrimSpace(oc.Endpoint); ep != "" {
		next.Client.Endpoint = ep
	}
	if oc.Token != "" {
		next.Client.Token, next.TokenFile = oc.Token, ""
	}
	if oc.CertFile != "" || oc.KeyFile != "" || oc.CAFile != "" {
		next.TLS.Enabled = true
	}
	if oc.CertFile != "" || oc.KeyFile != "" {
		next.TLS.CertFile, next.TLS.KeyFile = oc.CertFile, oc.KeyFile
	}
	if oc.CAFile != "" {
		next.TLS.CAFile = oc.CAFile
	}
	if err := next.Validate(); err != nil {
		var msgs []string
		for _, e := range unjoinAll(err) {
			msgs = append(msgs, "output."+e.Error())
		}
		return nil, errors.New("the connection settings make the output invalid: " + strings.Join(msgs, "; "))
	}
	r := *c
	r.Output.Options = &next
	sum := sha256.Sum256([]byte(c.Hash + "\x00" + oc.ID))
	r.Hash = fmt.Sprintf("%x", sum)
	r.connection = oc.ID
	return &r, nil
}

// OutputConnectionID is the ID of the connection settings over c, or "".
func (c *Config) OutputConnectionID() string { return c.connection }

func unjoinAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoinAll(e)...)
		}
		return out
	}
	return []error{err}
}
