package httpin

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// Defaults and limits: the one place each is written.
const (
	DefaultListen                = "127.0.0.1:8088"
	DefaultPath                  = "/"
	DefaultMaxBodyBytes          = 1 << 20
	DefaultMaxPendingBytes       = 16 << 20
	DefaultMaxConnections        = 256
	DefaultMaxConcurrentRequests = 16
	DefaultReadHeaderTimeout     = 10 * time.Second
	DefaultReadTimeout           = 60 * time.Second
	DefaultWriteTimeout          = 60 * time.Second
	DefaultIdleTimeout           = 2 * time.Minute
	DefaultCommitTimeout         = 30 * time.Second
	DefaultRetryAfter            = time.Second
	minBodyBytes                 = 1 << 10
	maxBodyBytesLimit            = 256 << 20
)

// Config is the `input` section for `type: http`; yaml tags are the keys.
type Config struct {
	// Listen is host:port. Default 127.0.0.1:8088. An address other hosts
	// reach without TLS is warned about.
	Listen string `yaml:"listen"`
	// Path is the one path POSTs are taken at. Default "/".
	Path string `yaml:"path"`
	// BearerToken, when set, is required as "Authorization: Bearer <it>";
	// BearerTokenFile holds it in a file instead, and wins.
	BearerToken     string `yaml:"bearer-token"`
	BearerTokenFile string `yaml:"bearer-token-file"`
	// TLS serves HTTPS, optionally requiring client certificates (mTLS).
	TLS TLSConfig `yaml:"tls"`
	// MaxBodyBytes bounds a request body, as sent and decompressed: over
	// it the answer is 413. Default 1 MiB.
	MaxBodyBytes int `yaml:"max-body-bytes"`
	// MaxPendingBytes bounds the records taken and not yet in the WAL;
	// a request that does not fit is answered 429. Default 16 MiB; at
	// least max-body-bytes.
	MaxPendingBytes int `yaml:"max-pending-bytes"`
	// MaxConnections bounds open connections; more wait to be accepted.
	// Default 256.
	MaxConnections int `yaml:"max-connections"`
	// MaxConcurrentRequests bounds the requests read and decoded at once
	// (each holds up to max-body-bytes); one more is answered 429.
	// Default 16.
	MaxConcurrentRequests int `yaml:"max-concurrent-requests"`
	// Timeouts: the request's headers, the whole request with its body,
	// writing the answer (which waits for the commit: keep it above
	// commit-timeout-ms), and a kept-alive idle connection.
	ReadHeaderTimeout time.Duration `yaml:"read-header-timeout-ms"`
	ReadTimeout       time.Duration `yaml:"read-timeout-ms"`
	WriteTimeout      time.Duration `yaml:"write-timeout-ms"`
	IdleTimeout       time.Duration `yaml:"idle-timeout-ms"`
	// CommitTimeout bounds the wait for the WAL commit; past it the answer
	// is 503 (the records may still be stored: a resend may duplicate).
	// Default 30s.
	CommitTimeout time.Duration `yaml:"commit-timeout-ms"`
	// RetryAfter is what a 429 asks the sender to wait (whole seconds,
	// at least 1). Default 1s.
	RetryAfter time.Duration `yaml:"retry-after-ms"`
	_          struct{}
}

// TLSConfig is the listener's TLS.
type TLSConfig struct {
	CertFile string `yaml:"cert-file"`
	KeyFile  string `yaml:"key-file"`
	// ClientCAFile, when set, requires every sender to present a
	// certificate signed by one of these CAs (mTLS).
	ClientCAFile string `yaml:"client-ca-file"`
	_            struct{}
}

func (t TLSConfig) enabled() bool { return strings.TrimSpace(t.CertFile) != "" }

// NewDefaultConfig returns the defaults; agent.yaml is decoded on top.
func NewDefaultConfig() *Config {
	return &Config{
		Listen:                DefaultListen,
		Path:                  DefaultPath,
		MaxBodyBytes:          DefaultMaxBodyBytes,
		MaxPendingBytes:       DefaultMaxPendingBytes,
		MaxConnections:        DefaultMaxConnections,
		MaxConcurrentRequests: DefaultMaxConcurrentRequests,
		ReadHeaderTimeout:     DefaultReadHeaderTimeout,
		ReadTimeout:           DefaultReadTimeout,
		WriteTimeout:          DefaultWriteTimeout,
		IdleTimeout:           DefaultIdleTimeout,
		CommitTimeout:         DefaultCommitTimeout,
		RetryAfter:            DefaultRetryAfter,
	}
}

var (
	_ input.Config     = (*Config)(nil)
	_ input.PathAnchor = (*Config)(nil)
	_ input.Sourcer    = (*Config)(nil)
	_ input.Redacter   = (*Config)(nil)
	_ input.Adviser    = (*Config)(nil)
)

// Validate reports every problem at once; each is an *input.FieldError.
// It reads the token and TLS files, so a missing one fails `config check`
// as it would fail the start.
func (c *Config) Validate() error {
	var errs []error
	if _, port, err := net.SplitHostPort(strings.TrimSpace(c.Listen)); err != nil || port == "" {
		errs = append(errs, input.Errorf("listen", "must be host:port, got %q", c.Listen))
	}
	if !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, input.Errorf("path", "must start with /, got %q", c.Path))
	}
	if _, err := c.token(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.tlsConfig(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkRange("max-body-bytes", c.MaxBodyBytes, minBodyBytes, maxBodyBytesLimit))
	errs = append(errs, checkRange("max-pending-bytes", c.MaxPendingBytes, max(c.MaxBodyBytes, 64<<10), 1<<30))
	errs = append(errs, checkRange("max-connections", c.MaxConnections, 1, 100_000))
	errs = append(errs, checkRange("max-concurrent-requests", c.MaxConcurrentRequests, 1, 10_000))
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"read-header-timeout-ms", c.ReadHeaderTimeout}, {"read-timeout-ms", c.ReadTimeout}, {"write-timeout-ms", c.WriteTimeout},
		{"idle-timeout-ms", c.IdleTimeout}, {"commit-timeout-ms", c.CommitTimeout}} {
		if d.v <= 0 {
			errs = append(errs, input.Errorf(d.key, "must be > 0, got %d", d.v.Milliseconds()))
		}
	}
	if c.RetryAfter < time.Second {
		errs = append(errs, input.Errorf("retry-after-ms", "must be at least 1000 (Retry-After is in whole seconds), got %d", c.RetryAfter.Milliseconds()))
	}
	if c.WriteTimeout > 0 && c.CommitTimeout >= c.WriteTimeout {
		errs = append(errs, input.Errorf("commit-timeout-ms", "must be below write-timeout-ms (%d): the answer waits for the commit", c.WriteTimeout.Milliseconds()))
	}
	return errors.Join(errs...)
}

func checkRange(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return input.Errorf(key, "must be between %d and %d, got %d", lo, hi, v)
	}
	return nil
}

// token is the bearer token, from its file when one is named; "" when
// none is required.
func (c *Config) token() (string, error) {
	if c.BearerTokenFile == "" {
		return c.BearerToken, nil
	}
	b, err := os.ReadFile(c.BearerTokenFile)
	if err != nil {
		return "", input.Errorf("bearer-token-file", "cannot read: %v", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", input.Errorf("bearer-token-file", "%s is empty", c.BearerTokenFile)
	}
	return tok, nil
}

// tlsConfig is the listener's TLS, nil without cert-file.
func (c *Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	if t.enabled() != (strings.TrimSpace(t.KeyFile) != "") {
		return nil, input.Errorf("tls", "cert-file and key-file go together: set both or neither")
	}
	if !t.enabled() {
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

// Advice warns of a listener other hosts reach without TLS.
func (c *Config) Advice() []input.FieldError {
	host, _, err := net.SplitHostPort(strings.TrimSpace(c.Listen))
	if err != nil || c.TLS.enabled() {
		return nil
	}
	if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return []input.FieldError{{Key: "listen", Err: fmt.Errorf("%q is reachable from other hosts without TLS: records (and a bearer token) cross the network in clear; set tls", c.Listen)}}
}

// AnchorPaths resolves the token and TLS files against base.
func (c *Config) AnchorPaths(base string) {
	if base == "" {
		return
	}
	for _, p := range []*string{&c.BearerTokenFile, &c.TLS.CertFile, &c.TLS.KeyFile, &c.TLS.ClientCAFile} {
		if v := strings.TrimSpace(*p); v != "" && !filepath.IsAbs(v) {
			*p = filepath.Join(base, v)
		}
	}
}

// Sources names where the input listens.
func (c *Config) Sources() []string {
	scheme := "http"
	if c.TLS.enabled() {
		scheme = "https"
	}
	return []string{scheme + "://" + strings.TrimSpace(c.Listen) + c.Path}
}

// Redacted returns a copy with the token replaced.
func (c *Config) Redacted() input.Config {
	r := *c
	if r.BearerToken != "" {
		r.BearerToken = input.RedactedValue
	}
	return &r
}
