package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// Client is an EdgeSocket collector. Send calls are serialised (one
// session, one exchange at a time); Stats, Connected and Close may be
// called from any goroutine.
type Client struct {
	cfg  Config
	tls  *tls.Config
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	log  *slog.Logger
	// now times the steps of a Probe; tests replace it.
	now func() time.Time

	// backoff paces reconnect attempts and resends after RETRY; tests set
	// its Rand to get exact pauses.
	backoff backoff.Policy

	mu         sync.Mutex // held by Send; guards sess, hadSession and barrierEvery
	sess       *session
	hadSession bool
	// barrierEvery is how many batch lines go out between commit
	// barriers: CommitEvery, halved after a session ends unbalanced and
	// doubled back after each balance.
	barrierEvery int

	life      context.Context // done once Close runs
	closeLife context.CancelFunc
	closeOnce sync.Once

	connected atomic.Bool
	stats     counters

	// wakeMu guards wake and awaiting: wake, Wake was called since a
	// streaming call last waited; awaiting, the connection a streaming
	// call waits on for a reply (nil when none). woken: Wake was ever
	// called, so the streaming calls' feeds announce their segments.
	wakeMu   sync.Mutex
	wake     bool
	awaiting net.Conn
	woken    atomic.Bool
	// backstop is the look of a streaming call whose feeds are announced:
	// streamPollWoken; tests lengthen it.
	backstop time.Duration
}

var _ transport.Sender = (*Client)(nil)

// New validates cfg and returns a client. It does not connect: the first
// Send does, so an engine that is down never stops the caller from
// starting.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("edgesocket client config: %w", err)
	}
	cfg.Endpoint, cfg.Token = strings.TrimSpace(cfg.Endpoint), strings.TrimSpace(cfg.Token)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg, log: cfg.Logger.With(slog.String("endpoint", cfg.Endpoint)), now: time.Now, barrierEvery: cfg.CommitEvery}
	c.backoff = backoff.Policy{Initial: cfg.InitialBackoff, Max: cfg.MaxBackoff}
	c.backstop = streamPollWoken
	if cfg.TLS != nil {
		c.tls = cfg.TLS.Clone()
		if c.tls.ServerName == "" {
			host, _, _ := net.SplitHostPort(cfg.Endpoint)
			c.tls.ServerName = host
		}
	}
	c.dial = cfg.Dial
	if c.dial == nil {
		d := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{
			// The protocol has no heartbeat: let the kernel find a peer
			// that vanished while the session sat idle.
			Enable:   true,
			Idle:     15 * time.Second,
			Interval: 5 * time.Second,
			Count:    3,
		}}
		c.dial = d.DialContext
	}
	c.life, c.closeLife = context.WithCancel(context.Background())
	return c, nil
}

// Connected reports whether an authenticated session is open.
func (c *Client) Connected() bool { return c.connected.Load() }

// Stats returns the counters so far.
func (c *Client) Stats() Stats { return c.stats.snapshot() }

// Close ends the session and makes later Sends fail with
// transport.ErrClosed. A Send in progress returns promptly. It is
// idempotent and always returns nil.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closeLife()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.dropSession()
	})
	return nil
}

// exclusive takes the session for one call (Send, Settle, Poll and
// Connect are serialised) and returns ctx, also done once Close runs;
// done releases both.
func (c *Client) exclusive(ctx context.Context) (context.Context, func()) {
	c.mu.Lock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.life, cancel)
	return ctx, func() {
		stop()
		cancel()
		c.mu.Unlock()
	}
}

// dropSession closes the current session, if any. Callers hold mu.
func (c *Client) dropSession() {
	if c.sess != nil {
		c.sess.close()
		c.sess = nil
		c.connected.Store(false)
	}
}

// setSession installs a fresh session. Callers hold mu.
func (c *Client) setSession(s *session) {
	c.sess = s
	c.connected.Store(true)
	c.stats.connects.Add(1)
	if c.hadSession {
		c.stats.reconnects.Add(1)
	}
	c.hadSession = true
}

// Connect opens and authenticates a session now, unless one is open, and
// keeps it for the next Send: a caller holding several clients (failover)
// learns that an engine answers again without sending a batch, and the
// Send that follows does not pay for the handshake nor race an engine
// that reopens its port between a probe and the session. It makes one
// connect attempt; its error wraps transport.ErrAuthFailed or
// transport.ErrRejected when the engine refused the session, and is
// transport.ErrClosed after Close. It waits for a Send in progress.
func (c *Client) Connect(ctx context.Context) error {
	if c.life.Err() != nil {
		return transport.ErrClosed
	}
	ctx, done := c.exclusive(ctx)
	defer done()
	if c.sess != nil {
		if err := c.sess.check(); err == nil {
			return nil
		}
		c.dropSession()
	}
	s, err := c.connect(ctx)
	if err != nil {
		if stopErr := c.stopped(ctx); stopErr != nil {
			return stopErr
		}
		return err
	}
	c.setSession(s)
	c.log.Info("edgesocket session authenticated ahead of a send")
	return nil
}
