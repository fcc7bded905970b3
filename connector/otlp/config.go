package otlp

import (
	"errors"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/listenconf"
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
type TLSConfig = listenconf.TLS

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
		if l.v != "" {
			errs = append(errs, listenconf.HostPort(l.key, l.v))
		}
	}
	if _, err := c.TLS.Load(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs,
		listenconf.Range("max-body-bytes", c.MaxBodyBytes, 1<<10, 256<<20),
		listenconf.Range("max-record-bytes", c.MaxRecordBytes, 1<<10, c.MaxPendingBytes),
		listenconf.Range("max-pending-bytes", c.MaxPendingBytes, 64<<10, 1<<30),
		listenconf.Range("max-concurrent-requests", c.MaxConcurrentRequests, 1, 10_000),
		listenconf.Positive("commit-timeout-ms", c.CommitTimeout),
		listenconf.Positive("read-timeout-ms", c.ReadTimeout),
		listenconf.Positive("idle-timeout-ms", c.IdleTimeout),
		listenconf.RetryAfter(c.RetryAfter))
	return errors.Join(errs...)
}

// Advice warns of a listener other hosts reach without TLS.
func (c *Config) Advice() []input.FieldError {
	if c.TLS.Enabled() {
		return nil
	}
	var out []input.FieldError
	for _, l := range []struct{ key, v string }{{"http-listen", c.HTTPListen}, {"grpc-listen", c.GRPCListen}} {
		if e := listenconf.Exposed(l.key, l.v, "logs"); e != nil {
			out = append(out, *e)
		}
	}
	return out
}

// AnchorPaths resolves the TLS files against base.
func (c *Config) AnchorPaths(base string) {
	listenconf.AnchorPaths(base, c.TLS.Files()...)
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
