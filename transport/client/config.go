package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Config configures a Client. Start from DefaultConfig: every duration and
// count must be > 0. The yaml tags are the agent.yaml keys of the output
// section, so a config decoder fills this struct directly.
type Config struct {
	// Endpoint is the engine's host:port. Surrounding spaces are ignored,
	// as the Java agent trims it.
	Endpoint string `yaml:"endpoint"`
	// Token is sent in __AUTH__; it must equal the EdgeSocket source's
	// token. Surrounding spaces are ignored (Java parity).
	Token string `yaml:"token"`
	// ConnectTimeout bounds dialing plus the TLS handshake. Default 5s.
	ConnectTimeout time.Duration `yaml:"connect-timeout-ms"`
	// ReadTimeout is how long the engine may stay silent while replies are
	// owed (auth or batches) before the connection is declared dead and
	// replaced. It also caps the wait a QUEUE_FULL reply asks for.
	// Default 30s.
	ReadTimeout time.Duration `yaml:"read-timeout-ms"`
	// MaxBatchSendAttempts is how many RETRY replies a batch may get in one
	// Send call before it is Failed. Default 64.
	MaxBatchSendAttempts int `yaml:"max-batch-send-attempts"`
	// InitialBackoff and MaxBackoff bound the jittered exponential waits
	// after RETRY and between connect attempts. Defaults 100ms and 30s.
	InitialBackoff time.Duration `yaml:"initial-backoff-ms"`
	MaxBackoff     time.Duration `yaml:"max-backoff-ms"`
	// MaxReconnectCycles is how many connect attempts one Send call makes
	// without progress before it returns transport.ErrUnavailable.
	// Default 16.
	MaxReconnectCycles int `yaml:"max-reconnect-cycles"`
	// MaxInFlight caps how many batches may await replies at once. Each
	// session's window starts at 64 (or MaxInFlight if lower), grows while
	// it limits the rate, up to twice the link's measured bandwidth-delay
	// product (never below 1024), and halves on QUEUE_FULL or RETRY (see
	// window), so a long link is kept full and a short one costs nothing
	// more. 1 is the Java agent's one-at-a-time exchange. Default 32768,
	// enough for tens of thousands of events/s over a satellite round
	// trip; at most MaxInFlightLimit.
	MaxInFlight int `yaml:"max-in-flight"`
	// CommitEvery is how many batch lines at most go out between two
	// commit barriers ("__COMMIT__" lines whose replies prove the batch
	// replies before them in step); after a session ends before its
	// barrier the interval halves, and it grows back with each balance.
	// Default 256.
	CommitEvery int `yaml:"commit-every"`
	// Checkpoint selects checkpoint delivery (transport.Committer): every
	// new session is settled before a batch goes out on it, and its first
	// batch goes alone. Set by the agent from agent.delivery-guarantee.
	Checkpoint bool `yaml:"-"`
	// TLS, when set, wraps the connection (see TLSOptions.Build). An empty
	// ServerName is taken from Endpoint's host.
	TLS *tls.Config `yaml:"-"`
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger `yaml:"-"`
	// Dial replaces the TCP dialer (tests, proxies). It must honour ctx.
	// When nil, a net.Dialer with TCP keepalive is used.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error) `yaml:"-"`

	_ struct{} // forces keyed literals, so fields can be added
}

// MaxCommitEvery caps Config.CommitEvery: the batches held until a
// barrier balances are resent if it does not.
const MaxCommitEvery = 65536

// MaxInFlightLimit caps Config.MaxInFlight.
const MaxInFlightLimit = 65536

// DefaultConfig returns the Java agent's defaults with pipelining on. It is
// the only place these defaults are written.
func DefaultConfig() Config {
	return Config{
		ConnectTimeout:       5 * time.Second,
		ReadTimeout:          30 * time.Second,
		MaxBatchSendAttempts: 64,
		InitialBackoff:       100 * time.Millisecond,
		MaxBackoff:           30 * time.Second,
		MaxReconnectCycles:   16,
		MaxInFlight:          32768,
		CommitEvery:          256,
	}
}

// Validate is the one check of c: the endpoint, the token and the tuning.
// Each problem is a *transport.FieldError named by its agent.yaml key;
// messages never quote the token.
func (c Config) Validate() error {
	var errs []error
	if err := checkEndpoint(strings.TrimSpace(c.Endpoint)); err != nil {
		errs = append(errs, &transport.FieldError{Key: "endpoint", Err: err})
	}
	if err := protocol.CheckToken(strings.TrimSpace(c.Token)); err != nil {
		errs = append(errs, transport.Errorf("token", "%w (it must equal the EdgeSocket source's token)", err))
	}
	if err := c.ValidateTuning(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ValidateTuning checks the timeouts, backoffs and counts only: a caller
// that keeps these settings without sending (the agent's console output
// accepts a transport's keys) still refuses values that are wrong.
// Durations are shown in milliseconds, as the keys are written.
func (c Config) ValidateTuning() error {
	var errs []error
	positiveMs := func(key string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, transport.Errorf(key, "must be > 0, got %d", d.Milliseconds()))
		}
	}
	positive := func(key string, n int) {
		if n <= 0 {
			errs = append(errs, transport.Errorf(key, "must be > 0, got %d", n))
		}
	}
	positiveMs("connect-timeout-ms", c.ConnectTimeout)
	positiveMs("read-timeout-ms", c.ReadTimeout)
	positive("max-batch-send-attempts", c.MaxBatchSendAttempts)
	positiveMs("initial-backoff-ms", c.InitialBackoff)
	positiveMs("max-backoff-ms", c.MaxBackoff)
	if c.InitialBackoff > 0 && c.MaxBackoff > 0 && c.MaxBackoff < c.InitialBackoff {
		errs = append(errs, transport.Errorf("max-backoff-ms", "must be >= initial-backoff-ms (%d), got %d",
			c.InitialBackoff.Milliseconds(), c.MaxBackoff.Milliseconds()))
	}
	positive("max-reconnect-cycles", c.MaxReconnectCycles)
	if c.CommitEvery < 1 || c.CommitEvery > MaxCommitEvery {
		errs = append(errs, transport.Errorf("commit-every", "must be between 1 and %d, got %d", MaxCommitEvery, c.CommitEvery))
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > MaxInFlightLimit {
		errs = append(errs, transport.Errorf("max-in-flight", "must be between 1 and %d, got %d", MaxInFlightLimit, c.MaxInFlight))
	}
	return errors.Join(errs...)
}

// checkEndpoint requires host:port with a port in 1..65535. The address
// may be shown: it is not a secret.
func checkEndpoint(ep string) error {
	if ep == "" {
		return errors.New("required: host:port of the engine's EdgeSocket source, e.g. 127.0.0.1:9999")
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil || host == "" {
		return fmt.Errorf("expected host:port, got %q", ep)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("invalid port in %q: must be 1..65535", ep)
	}
	return nil
}
