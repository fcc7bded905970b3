package otlp

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

// TypeName is the `input.type` value of this input.
const TypeName = "otlp"

// Defaults and limits: the one place each is written.
const (
	DefaultHTTPListen            = "127.0.0.1:4318"
	DefaultGRPCListen            = "127.0.0.1:4317"
	DefaultMaxBodyBytes          = 4 << 20
	DefaultMaxRecordBytes        = 1 << 20
	DefaultMaxPendingBytes       = 16 << 20
	DefaultMaxConcurrentRequests = 16
	DefaultCommitTimeout         = 30 * time.Second
	DefaultRetryAfter            = time.Second
	DefaultReadTimeout           = 60 * time.Second
	DefaultIdleTimeout           = 2 * time.Minute
)

// Config is the `input` section for `type: otlp`; yaml tags are the keys.
type Config struct {
	// HTTPListen is host:port of OTLP/HTTP (POST /v1/logs); "" turns it
	// off. Default 127.0.0.1:4318.
	HTTPListen string `yaml:"http-listen"`
	// GRPCListen is host:port of OTLP/gRPC; "" turns it off. Default
	// 127.0.0.1:4317.
	GRPCListen string `yaml:"grpc-listen"`
	// TLS applies to both listeners; client-ca-file requires client
	// certificates (mTLS).
	TLS TLSConfig `yaml:"tls"`
	// MaxBodyBytes bounds one export request, decompressed (HTTP) or as a
	// gRPC message. Default 4 MiB.
	MaxBodyBytes int `yaml:"max-body-bytes"`
	// MaxRecordBytes bounds one record's event; a larger one is rejected
	// in partial_success. Default 1 MiB.
	MaxRecordBytes int `yaml:"max-record-bytes"`
	// MaxPendingBytes bounds the records taken and not yet in the WAL;
	// an export that does not fit is refused as retryable. Default 16 MiB.
	MaxPendingBytes int `yaml:"max-pending-bytes"`
	// MaxConcurrentRequests bounds the exports decoded at once per
	// listener. Default 16.
	MaxConcurrentRequests int `yaml:"max-concurrent-requests"`
	// CommitTimeout bounds the wait for the WAL commit; past it the
	// export fails as retryable (the records may still be stored).
	// Default 30s.
	CommitTimeout time.Duration `yaml:"commit-timeout-ms"`
	// RetryAfter is the delay a refusal asks for. Default 1s.
	RetryAfter time.Duration `yaml:"retry-after-ms"`
	// ReadTimeout bounds reading one HTTP request; IdleTimeout a
	// kept-alive connection between requests. Defaults 60s and 2 min.
	ReadTimeout time.Duration `yaml:"read-timeout-ms"`
	IdleTimeout time.Duration `yaml:"idle-timeout-ms"`
	_           struct{}
}

// TLSConfig is the listeners' TLS.
type TLSConfig struct {
	CertFile     string `yaml:"cert-file"`
	KeyFile      string `yaml:"key-file"`
	ClientCAFile string `yaml:"client-ca-file"`
	_            struct{}
}

// NewDefaultConfig returns the defaults; agent.yaml is decoded on top.
func NewDefaultConfig() *Config {
	return &Config{
		HTTPListen: DefaultHTTPListen, GRPCListen: DefaultGRPCListen,
		MaxBodyBytes: DefaultMaxBodyBytes, MaxRecordBytes: DefaultMaxRecordBytes,
		MaxPendingBytes: DefaultMaxPendingBytes, MaxConcurrentRequests: DefaultMaxConcurrentRequests,
		CommitTimeout: DefaultCommitTimeout, RetryAfter: DefaultRetryAfter,
		ReadTimeout: DefaultReadTimeout, IdleTimeout: DefaultIdleTimeout,
	}
}

var (
	_ input.Config     = (*Config)(nil)
	_ input.PathAnchor = (*Config)(nil)
	_ input.Sourcer    = (*Config)(nil)
	_ input.Adviser    = (*Config)(nil)
)

// Validate reports every problem at once; each is an *input.FieldError.
func (c *Config) Validate() error {
	var errs []error
	if c.HTTPListen == "" && c.GRPCListen == "" {
		errs = append(errs, input.Errorf("http-listen", "set http-listen or grpc-listen (or both)"))
	}
	for _, l := range []struct{ key, v string }{{"http-listen", c.HTTPListen}, {"grpc-listen", c.GRPCListen}} {
		if l.v == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(l.v); err != nil || port == "" {
			errs = append(errs, input.Errorf(l.key, "must be host:port, got %q", l.v))
		}
	}
	if _, err := c.tlsConfig(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkRange("max-body-bytes", c.MaxBodyBytes, 1<<10, 256<<20))
	errs = append(errs, checkRange("max-record-bytes", c.MaxRecordBytes, 1<<10, c.MaxPendingBytes))
	errs = append(errs, checkRange("max-pending-bytes", c.MaxPendingBytes, 64<<10, 1<<30))
	errs = append(errs, checkRange("max-concurrent-requests", c.MaxConcurrentRequests, 1, 10_000))
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"commit-timeout-ms", c.CommitTimeout}, {"read-timeout-ms", c.ReadTimeout}, {"idle-timeout-ms", c.IdleTimeout}} {
		if d.v <= 0 {
			errs = append(errs, input.Errorf(d.key, "must be > 0, got %d", d.v.Milliseconds()))
		}
	}
	if c.RetryAfter < time.Second {
		errs = append(errs, input.Errorf("retry-after-ms", "must be at least 1000 (Retry-After is in whole seconds), got %d", c.RetryAfter.Milliseconds()))
	}
	return errors.Join(errs...)
}

func checkRange(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return input.Errorf(key, "must be between %d and %d, got %d", lo, hi, v)
	}
	return nil
}

func (c *Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, input.Errorf("tls", "cert-file and key-file go together: set both or neither")
	}
	if t.CertFile == "" {
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
	if c.TLS.CertFile != "" {
		return nil
	}
	var out []input.FieldError
	for _, l := range []struct{ key, v string }{{"http-listen", c.HTTPListen}, {"grpc-listen", c.GRPCListen}} {
		host, _, err := net.SplitHostPort(l.v)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
			continue
		}
		out = append(out, input.FieldError{Key: l.key, Err: fmt.Errorf("%q is reachable from other hosts without TLS: logs cross the network in clear; set tls", l.v)})
	}
	return out
}

// AnchorPaths resolves the TLS files against base.
func (c *Config) AnchorPaths(base string) {
	if base == "" {
		return
	}
	for _, p := range []*string{&c.TLS.CertFile, &c.TLS.KeyFile, &c.TLS.ClientCAFile} {
		if v := strings.TrimSpace(*p); v != "" && !filepath.IsAbs(v) {
			*p = filepath.Join(base, v)
		}
	}
}

// Sources names the listeners.
func (c *Config) Sources() []string {
	var out []string
	if c.HTTPListen != "" {
		out = append(out, "otlp+http://"+c.HTTPListen+"/v1/logs")
	}
	if c.GRPCListen != "" {
		out = append(out, "otlp+grpc://"+c.GRPCListen)
	}
	return out
}
