package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSOptions name the files of a TLS setup, as output.tls.* does.
type TLSOptions struct {
	// CAFile is a PEM bundle of roots that verify the engine; empty means
	// the system roots.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and key, for
	// engines (or proxies) that require mutual TLS. Both or neither.
	CertFile string
	KeyFile  string
	// ServerName overrides the name checked in the engine's certificate;
	// empty means the endpoint's host.
	ServerName string
	// InsecureSkipVerify turns verification off. For tests only: it lets
	// anyone in the path read the token.
	InsecureSkipVerify bool
}

// Build loads the files and returns a config with TLS 1.2 as the minimum.
func (o TLSOptions) Build() (*tls.Config, error) {
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
	switch {
	case o.CertFile != "" && o.KeyFile != "":
		pair, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case o.CertFile != "" || o.KeyFile != "":
		return nil, errors.New("tls: cert file and key file must be given together")
	}
	return cfg, nil
}
