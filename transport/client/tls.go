package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/tlsfiles"
)

// TLSOptions name the files of a TLS setup; the yaml tags are the keys of
// agent.yaml's output.tls section.
type TLSOptions struct {
	// Enabled turns TLS on; when false the other fields are ignored.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM bundle of roots that verify the engine; empty means
	// the system roots.
	CAFile string `yaml:"ca-file"`
	// CertFile and KeyFile are a PEM client certificate and key, for
	// engines (or proxies) that require mutual TLS. Both or neither.
	CertFile string `yaml:"cert-file"`
	KeyFile  string `yaml:"key-file"`
	// ServerName overrides the name checked in the engine's certificate;
	// empty means the endpoint's host.
	ServerName string `yaml:"server-name"`
	// InsecureSkipVerify turns verification off. For tests only: it lets
	// anyone in the path read the token.
	InsecureSkipVerify bool `yaml:"insecure-skip-verify"`
}

// Validate is the one check of the options that needs no file: a client
// certificate comes with its key. Problems are *transport.FieldError named
// by their key under output.tls.
func (o TLSOptions) Validate() error {
	if !o.Enabled {
		return nil
	}
	switch {
	case o.CertFile != "" && o.KeyFile == "":
		return transport.Errorf("key-file", "required when cert-file is set")
	case o.KeyFile != "" && o.CertFile == "":
		return transport.Errorf("cert-file", "required when key-file is set")
	}
	return nil
}

// Build loads the files and returns a config with TLS 1.2 as the minimum,
// or nil when TLS is not enabled.
func (o TLSOptions) Build() (*tls.Config, error) {
	if !o.Enabled {
		return nil, nil
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.ServerName,
		InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // opt-in, documented as test-only
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls ca file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca file %s: no PEM certificate found", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if o.CertFile != "" {
		// Read again when the files change: a rotated client certificate
		// is presented from the next handshake on.
		pair, err := tlsfiles.Load(o.CertFile, o.KeyFile, tlsfiles.Options{})
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		cfg.GetClientCertificate = pair.GetClientCertificate
	}
	return cfg, nil
}
