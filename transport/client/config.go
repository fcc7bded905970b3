package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Config configures a Client. Zero durations and counts take the defaults
// of DefaultConfig; negative ones are errors.
type Config struct {
	// Endpoint is the engine's host:port.
	Endpoint string
	// Token is sent in __AUTH__; it must equal the EdgeSocket source's token.
	Token string
	// ConnectTimeout bounds dialing plus the TLS handshake. Default 5s.
	ConnectTimeout time.Duration
	// ReadTimeout is how long the engine may stay silent while replies are
	// owed (auth or batches) before the connection is declared dead and
	// replaced. It also caps the wait a QUEUE_FULL reply asks for.
	// Default 30s.
	ReadTimeout time.Duration
	// MaxBatchSendAttempts is how many RETRY replies a batch may get in one
	// Send call before it is Failed. Default 64.
	MaxBatchSendAttempts int
	// InitialBackoff and MaxBackoff bound the jittered exponential waits
	// after RETRY and between connect attempts. Defaults 100ms and 30s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxReconnectCycles is how many connect attempts one Send call makes
	// without progress before it returns transport.ErrUnavailable.
	// Default 16.
	MaxReconnectCycles int
	// MaxInFlight is how many batches may await replies at once. 1 is the
	// Java agent's behaviour. Default 64, at most MaxInFlightLimit.
	MaxInFlight int
	// TLS, when set, wraps the connection (see TLSOptions.Build). An empty
	// ServerName is taken from Endpoint's host.
	TLS *tls.Config
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Dial replaces the TCP dialer (tests, proxies). It must honour ctx.
	// When nil, a net.Dialer with TCP keepalive is used.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	_ struct{} // forces keyed literals, so fields can be added
}

// MaxInFlightLimit caps Config.MaxInFlight.
const MaxInFlightLimit = 4096

// DefaultConfig returns the Java agent's defaults with pipelining on.
func DefaultConfig() Config {
	return Config{
		ConnectTimeout:       5 * time.Second,
		ReadTimeout:          30 * time.Second,
		MaxBatchSendAttempts: 64,
		InitialBackoff:       100 * time.Millisecond,
		MaxBackoff:           30 * time.Second,
		MaxReconnectCycles:   16,
		MaxInFlight:          64,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = d.ConnectTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = d.ReadTimeout
	}
	if c.MaxBatchSendAttempts == 0 {
		c.MaxBatchSendAttempts = d.MaxBatchSendAttempts
	}
	if c.InitialBackoff == 0 {
		c.InitialBackoff = d.InitialBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(d.MaxBackoff, c.InitialBackoff)
	}
	if c.MaxReconnectCycles == 0 {
		c.MaxReconnectCycles = d.MaxReconnectCycles
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = d.MaxInFlight
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every problem in c, joined. Messages name the field
// and never quote the token.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if err := checkEndpoint(c.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if err := protocol.CheckToken(c.Token); err != nil {
		errs = append(errs, fmt.Errorf("token: %w (it must equal the EdgeSocket source's token)", err))
	}
	positive := []struct {
		name string
		v    time.Duration
	}{
		{"connect timeout", c.ConnectTimeout},
		{"read timeout", c.ReadTimeout},
		{"initial backoff", c.InitialBackoff},
		{"max backoff", c.MaxBackoff},
	}
	for _, p := range positive {
		if p.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v must be positive", p.name, p.v))
		}
	}
	if c.InitialBackoff > 0 && c.MaxBackoff > 0 && c.MaxBackoff < c.InitialBackoff {
		errs = append(errs, fmt.Errorf("max backoff %v is below initial backoff %v", c.MaxBackoff, c.InitialBackoff))
	}
	if c.MaxBatchSendAttempts < 0 {
		errs = append(errs, fmt.Errorf("max batch send attempts %d must be >= 1", c.MaxBatchSendAttempts))
	}
	if c.MaxReconnectCycles < 0 {
		errs = append(errs, fmt.Errorf("max reconnect cycles %d must be >= 1", c.MaxReconnectCycles))
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > MaxInFlightLimit {
		errs = append(errs, fmt.Errorf("max in flight %d must be between 1 and %d", c.MaxInFlight, MaxInFlightLimit))
	}
	return errors.Join(errs...)
}

// checkEndpoint requires host:port with a port in 1..65535.
func checkEndpoint(ep string) error {
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return fmt.Errorf("endpoint %q: want host:port, e.g. 127.0.0.1:9999 (%v)", ep, err)
	}
	if host == "" {
		return fmt.Errorf("endpoint %q: host is empty (want host:port, e.g. 127.0.0.1:9999)", ep)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("endpoint %q: port %q must be a number from 1 to 65535", ep, port)
	}
	return nil
}
