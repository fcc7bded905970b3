package httpin

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/listenconf"
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
type TLSConfig = listenconf.TLS

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
	errs = append(errs, listenconf.HostPort("listen", strings.TrimSpace(c.Listen)))
	if !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, input.Errorf("path", "must start with /, got %q", c.Path))
	}
	if _, err := c.token(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.TLS.Load(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs,
		listenconf.Range("max-body-bytes", c.MaxBodyBytes, minBodyBytes, maxBodyBytesLimit),
		listenconf.Range("max-pending-bytes", c.MaxPendingBytes, max(c.MaxBodyBytes, 64<<10), 1<<30),
		listenconf.Range("max-connections", c.MaxConnections, 1, 100_000),
		listenconf.Range("max-concurrent-requests", c.MaxConcurrentRequests, 1, 10_000),
		listenconf.Positive("read-header-timeout-ms", c.ReadHeaderTimeout),
		listenconf.Positive("read-timeout-ms", c.ReadTimeout),
		listenconf.Positive("write-timeout-ms", c.WriteTimeout),
		listenconf.Positive("idle-timeout-ms", c.IdleTimeout),
		listenconf.Positive("commit-timeout-ms", c.CommitTimeout),
		listenconf.RetryAfter(c.RetryAfter))
	if c.WriteTimeout > 0 && c.CommitTimeout >= c.WriteTimeout {
		errs = append(errs, input.Errorf("commit-timeout-ms", "must be below write-timeout-ms (%d): the answer waits for the commit", c.WriteTimeout.Milliseconds()))
	}
	return errors.Join(errs...)
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

// Advice warns of a listener other hosts reach without TLS.
func (c *Config) Advice() []input.FieldError {
	if c.TLS.Enabled() {
		return nil
	}
	if e := listenconf.Exposed("listen", strings.TrimSpace(c.Listen), "records (and a bearer token)"); e != nil {
		return []input.FieldError{*e}
	}
	return nil
}

// AnchorPaths resolves the token and TLS files against base.
func (c *Config) AnchorPaths(base string) {
	listenconf.AnchorPaths(base, append(c.TLS.Files(), &c.BearerTokenFile)...)
}

// Sources names where the input listens.
func (c *Config) Sources() []string {
	scheme := "http"
	if c.TLS.Enabled() {
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
