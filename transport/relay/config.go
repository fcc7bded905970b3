package relay

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Handler receives one decoded record and settles its reply later
// through t (t.Done, exactly once, from any goroutine): replies still
// leave in request order per connection, so a slow batch holds back the
// replies after it. record is reused after the call returns: copy it to
// keep it. The call runs on the connection's reader: while it blocks,
// that connection alone stops being read (its collector's socket backs
// up), so it may wait briefly for room, but must not wait on anything
// that waits on the server.
type Handler func(p Peer, batchID int64, record []byte, t Ticket)

// Token is one accepted collector token and the name the collector is
// known by once it presented it (in logs, stats and Peer).
type Token struct {
	Name  string
	Value string
}

// Defaults: the one source of truth for each; callers that expose these
// settings (the edgesocket input's agent.yaml keys) take them from here.
const (
	DefaultAddr                   = "127.0.0.1:0"
	DefaultMaxConnections         = 1024
	DefaultMaxLineBytes           = 4 << 20
	DefaultMaxInFlight            = 64
	DefaultAuthTimeout            = time.Second
	DefaultMaxHandshakes          = 64
	DefaultMaxHandshakesPerSource = 8
	DefaultAuthFailDelay          = 250 * time.Millisecond
	DefaultAuthFailDelayMax       = 5 * time.Second
	DefaultAuthLogInterval        = 10 * time.Second
	DefaultReadTimeout            = 30 * time.Second
	DefaultIdleTimeout            = 5 * time.Minute
	DefaultWriteTimeout           = 10 * time.Second
)

// Limits: the ranges Validate accepts.
const (
	MaxMaxConnections = 100_000
	MinMaxLineBytes   = 256
	MaxMaxLineBytes   = 64 << 20
	MaxMaxInFlight    = 4096
	MaxMaxHandshakes  = 100_000
	// MaxAuthTimeout bounds the pre-authentication deadline: the engine
	// itself waits 1 s, and a long one lets silent connections sit.
	MaxAuthTimeout = time.Minute
	// MaxAuthFailDelay bounds the slowest answer to a wrong token.
	MaxAuthFailDelay = time.Minute
)

// Config configures a Server. Zero values take the defaults above; New
// rejects values outside the limits.
type Config struct {
	// Addr to listen on. Default DefaultAddr (a free loopback port).
	Addr string
	// Tokens are the accepted tokens, each with a name. Required.
	Tokens []Token
	// Decoder decodes batch payloads; nil passes them through (RAW).
	Decoder *codec.Decoder
	// Handler receives the records. Required.
	Handler Handler
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// TLS, when set, serves TLS.
	TLS *tls.Config
	// MaxConnections bounds the authenticated collectors at once; one
	// more gets REJECTED after its token checked out.
	MaxConnections int
	// MaxLineBytes bounds a request line; a longer one gets BAD_REQUEST
	// and the connection is closed.
	MaxLineBytes int
	// MaxInFlight bounds one connection's requests read but not yet
	// answered; reading pauses at the bound.
	MaxInFlight int
	// AuthTimeout bounds everything before authentication: the TLS
	// handshake and the token line, from accept. It is the idle time
	// allowed before the first byte, kept far below IdleTimeout.
	AuthTimeout time.Duration
	// MaxHandshakes bounds the connections not yet authenticated. When it
	// is reached, a new connection evicts the oldest one of the source
	// address holding the most, so a flood cannot keep a collector that
	// speaks at once from getting in.
	MaxHandshakes int
	// MaxHandshakesPerSource bounds the connections not yet authenticated
	// from one source address; beyond it, a new one evicts that source's
	// oldest.
	MaxHandshakesPerSource int
	// AuthFailDelay is the wait before checking a token from a source
	// address whose last attempt failed; it doubles with each further
	// failure up to AuthFailDelayMax, and is forgotten after a quiet
	// minute. Negative disables the slowing.
	AuthFailDelay    time.Duration
	AuthFailDelayMax time.Duration
	// AuthLogInterval is how often failed authentications are logged, as
	// one aggregate line (counts by reason and sources), never what was
	// presented.
	AuthLogInterval time.Duration
	// ReadTimeout bounds the reading of one request line once its first
	// byte arrived: a slow-loris line is cut.
	ReadTimeout time.Duration
	// IdleTimeout closes an authenticated connection that sends nothing
	// while it is owed no reply.
	IdleTimeout time.Duration
	// WriteTimeout bounds writing replies, and the wait for replies still
	// owed once a connection stopped reading: a collector that never
	// reads its replies is closed.
	WriteTimeout time.Duration

	_ struct{} // forces keyed literals, so fields can be added
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	defInt(&c.MaxConnections, DefaultMaxConnections)
	defInt(&c.MaxLineBytes, DefaultMaxLineBytes)
	defInt(&c.MaxInFlight, DefaultMaxInFlight)
	defInt(&c.MaxHandshakes, DefaultMaxHandshakes)
	defInt(&c.MaxHandshakesPerSource, DefaultMaxHandshakesPerSource)
	def(&c.AuthTimeout, DefaultAuthTimeout)
	def(&c.AuthFailDelay, DefaultAuthFailDelay)
	def(&c.AuthFailDelayMax, DefaultAuthFailDelayMax)
	def(&c.AuthLogInterval, DefaultAuthLogInterval)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every problem at once; zero values are valid (they take
// the defaults).
func (c Config) Validate() error {
	var errs []error
	if c.Handler == nil {
		errs = append(errs, errors.New("relay: a handler is required"))
	}
	errs = append(errs, c.checkTokens())
	d := c.withDefaults()
	ints := []struct {
		name      string
		v, lo, hi int
	}{
		{"max connections", d.MaxConnections, 1, MaxMaxConnections},
		{"max line bytes", d.MaxLineBytes, MinMaxLineBytes, MaxMaxLineBytes},
		{"max in flight", d.MaxInFlight, 1, MaxMaxInFlight},
		{"max handshakes", d.MaxHandshakes, 1, MaxMaxHandshakes},
		{"max handshakes per source", d.MaxHandshakesPerSource, 1, d.MaxHandshakes},
	}
	for _, x := range ints {
		if x.v < x.lo || x.v > x.hi {
			errs = append(errs, fmt.Errorf("relay %s %d: must be between %d and %d", x.name, x.v, x.lo, x.hi))
		}
	}
	durs := []struct {
		name string
		v    time.Duration
		hi   time.Duration
	}{
		{"auth timeout", d.AuthTimeout, MaxAuthTimeout},
		{"auth log interval", d.AuthLogInterval, 0},
		{"read timeout", d.ReadTimeout, 0},
		{"idle timeout", d.IdleTimeout, 0},
		{"write timeout", d.WriteTimeout, 0},
	}
	if d.AuthFailDelay > 0 {
		durs = append(durs, struct {
			name string
			v    time.Duration
			hi   time.Duration
		}{"auth fail delay max", d.AuthFailDelayMax, MaxAuthFailDelay})
		if d.AuthFailDelay > d.AuthFailDelayMax {
			errs = append(errs, fmt.Errorf("relay auth fail delay %v: must not exceed the auth fail delay max %v", d.AuthFailDelay, d.AuthFailDelayMax))
		}
	}
	for _, x := range durs {
		if x.v < 0 || x.hi > 0 && x.v > x.hi {
			errs = append(errs, fmt.Errorf("relay %s %v: must be above 0 and at most %v", x.name, x.v, x.hi))
		}
	}
	if d.AuthTimeout >= d.IdleTimeout {
		errs = append(errs, fmt.Errorf("relay auth timeout %v: must be below the idle timeout %v, so a connection that never speaks leaves first", d.AuthTimeout, d.IdleTimeout))
	}
	return errors.Join(errs...)
}

func (c Config) checkTokens() error {
	if len(c.Tokens) == 0 {
		return errors.New("relay tokens: at least one is required")
	}
	var errs []error
	seen := make(map[string]bool, len(c.Tokens))
	values := make(map[string]bool, len(c.Tokens))
	for i, t := range c.Tokens {
		switch {
		case strings.TrimSpace(t.Name) == "":
			errs = append(errs, fmt.Errorf("relay tokens[%d]: the name is empty", i))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("relay tokens[%d]: name %q is used twice", i, t.Name))
		}
		seen[t.Name] = true
		if err := protocol.CheckToken(t.Value); err != nil {
			errs = append(errs, fmt.Errorf("relay tokens[%d] (%s): %w", i, t.Name, err))
		} else if values[t.Value] {
			errs = append(errs, fmt.Errorf("relay tokens[%d] (%s): the same token is given to another name", i, t.Name))
		}
		values[t.Value] = true
	}
	return errors.Join(errs...)
}
