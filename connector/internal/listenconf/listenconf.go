// Package listenconf holds the settings and checks the listening push
// inputs (http, otlp) share: the listener's TLS files, a listen address,
// bounds and timeouts. Every problem is an *input.FieldError keyed as in
// agent.yaml.
package listenconf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// TLS is a listener's TLS, the `tls` block of the input's section.
type TLS struct {
	CertFile string `yaml:"cert-file"`
	KeyFile  string `yaml:"key-file"`
	// ClientCAFile, when set, requires every sender to present a
	// certificate signed by one of these CAs (mTLS).
	ClientCAFile string `yaml:"client-ca-file"`
	_            struct{}
}

// Enabled reports whether cert-file is set: the listener serves TLS.
func (t TLS) Enabled() bool { return strings.TrimSpace(t.CertFile) != "" }

// Load reads the files: nil without cert-file, otherwise a server
// config (TLS 1.2 at least) requiring client certificates when
// client-ca-file is set.
func (t TLS) Load() (*tls.Config, error) {
	if t.Enabled() != (strings.TrimSpace(t.KeyFile) != "") {
		return nil, input.Errorf("tls", "cert-file and key-file go together: set both or neither")
	}
	if !t.Enabled() {
		if t.ClientCAFile != "" {
			return nil, input.Errorf("tls.client-ca-file", "needs tls.cert-file and tls.key-file: mTLS is TLS first")
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, input.Errorf("tls", "load cert-file and key-file: %v", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, input.Errorf("tls.client-ca-file", "cannot read: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, input.Errorf("tls.client-ca-file", "%s holds no PEM certificate", t.ClientCAFile)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// Files are the paths of the block, for AnchorPaths.
func (t *TLS) Files() []*string { return []*string{&t.CertFile, &t.KeyFile, &t.ClientCAFile} }

// AnchorPaths resolves each relative path set against base ("" leaves
// them as they are).
func AnchorPaths(base string, paths ...*string) {
	if base == "" {
		return
	}
	for _, p := range paths {
		if v := strings.TrimSpace(*p); v != "" && !filepath.IsAbs(v) {
			*p = filepath.Join(base, v)
		}
	}
}

// HostPort checks that the value of key is host:port with a port.
func HostPort(key, v string) error {
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return input.Errorf(key, "must be host:port, got %q", v)
	}
	return nil
}

// Exposed is the advice for a listener at addr (under key) that other
// hosts reach without TLS, saying what crosses the network in clear;
// nil for a loopback address or one that does not parse.
func Exposed(key, addr, what string) *input.FieldError {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return &input.FieldError{Key: key, Err: fmt.Errorf("%q is reachable from other hosts without TLS: %s cross the network in clear; set tls", addr, what)}
}

// Range checks lo <= v <= hi.
func Range(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return input.Errorf(key, "must be between %d and %d, got %d", lo, hi, v)
	}
	return nil
}

// Positive checks a timeout (a *-ms key) is above zero.
func Positive(key string, d time.Duration) error {
	if d <= 0 {
		return input.Errorf(key, "must be > 0, got %d", d.Milliseconds())
	}
	return nil
}

// RetryAfter checks retry-after-ms: an HTTP Retry-After is in whole
// seconds, so at least one.
func RetryAfter(d time.Duration) error {
	if d < time.Second {
		return input.Errorf("retry-after-ms", "must be at least 1000 (Retry-After is in whole seconds), got %d", d.Milliseconds())
	}
	return nil
}
