package ingress

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

// Handler receives one decoded record and returns the reply line: ""
// means RECEIVED. Other useful answers: protocol.ReplyRetry,
// protocol.QueueFull(d), protocol.ReplyDecodeFailed. record is reused
// after the call returns: copy it to keep it.
type Handler func(batchID int64, record []byte) string

// CommitHandler answers __COMMIT__:<id>; "" means PENDING. The engine
// answers PENDING, ACK:<watermark>, RESEND or RETRY.
type CommitHandler func(batchID int64) string

// DeferredHandler receives one decoded record of a multi-collector
// server and settles its reply later through t (t.Done, exactly once,
// from any goroutine): replies still leave in request order per
// connection, so a slow batch holds back the replies after it. record is
// reused after the call returns: copy it to keep it. The call runs on
// the connection's reader: while it blocks, that connection alone stops
// being read (its collector's socket backs up), so it may wait briefly
// for room, but must not wait on anything that waits on the server.
type DeferredHandler func(p Peer, batchID int64, record []byte, t Ticket)

// Token is one accepted collector token and the name the collector is
// known by once it presented it (in logs, stats and Peer).
type Token struct {
	Name  string
	Value string
}

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Addr to listen on. Default "127.0.0.1:0" (a free loopback port).
	Addr string
	// Token the collector must present. Required.
	Token string
	// Decoder decodes batch payloads; nil passes them through (RAW).
	Decoder *codec.Decoder
	// Handler chooses each batch's reply; nil answers RECEIVED.
	Handler Handler
	// CommitHandler answers __COMMIT__; nil answers PENDING.
	CommitHandler CommitHandler
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Faults to inject from the start (see also Server.SetFaults).
	Faults Faults
	// TLS, when set, serves TLS (the engine itself speaks plain TCP).
	TLS *tls.Config
	// AuthTimeout bounds the wait for the auth line. Default 1s.
	AuthTimeout time.Duration
	// MaxLineBytes bounds a request line; a longer one gets BAD_REQUEST and
	// the connection is closed. Default protocol.DefaultMaxRequestBytes.
	MaxLineBytes int
	// Tokens, when set, are the accepted tokens, each with a name; Token
	// is then ignored. Multi-collector mode only.
	Tokens []Token
	// MaxConnections above 0 selects multi-collector mode: up to that
	// many authenticated collectors at once, each pipelined (many
	// requests in flight, replies in order). A collector beyond it gets
	// REJECTED. 0 keeps the engine's one collector at a time.
	MaxConnections int
	// MaxHandshakes bounds the connections not yet authenticated (multi
	// mode): a connection beyond it is refused at once, so a flood of
	// idle or garbage connections cannot take the collectors' slots.
	// Default 64.
	MaxHandshakes int
	// MaxInFlight bounds one connection's requests read but not yet
	// answered (multi mode); reading pauses at the bound. Default 256.
	MaxInFlight int
	// ReadTimeout bounds the reading of one request line once its first
	// byte arrived (multi mode): a slow-loris line is cut. Default 30s.
	ReadTimeout time.Duration
	// IdleTimeout closes a connection that sends nothing while it is owed
	// no reply (multi mode). Default 5m.
	IdleTimeout time.Duration
	// WriteTimeout bounds writing replies, and the wait for replies still
	// owed once a connection stopped reading (multi mode): a collector
	// that never reads its replies is closed. Default 10s.
	WriteTimeout time.Duration
	// Deferred, in multi mode, receives the records instead of Handler.
	Deferred DeferredHandler
	// RejectGrace is how long a new connection waits for a busy ingress
	// before it gets REJECTED. Default 250ms; negative means no wait.
	RejectGrace time.Duration

	_ struct{} // forces keyed literals, so fields can be added
}

// Faults are failures to inject. Counters are server-wide batch counts
// (resends included), so "every N" keeps firing across reconnects.
// Zero values inject nothing.
type Faults struct {
	// CutAfter: every CutAfter-th batch is handed to the Handler, then the
	// connection is closed without a reply, as when a link dies after the
	// engine took a batch. The collector resends it: a duplicate. A value
	// of 1 cuts every batch, so a collector never makes progress.
	CutAfter int
	// RetryEvery: every RetryEvery-th batch gets RETRY (not handled).
	RetryEvery int
	// QueueFullEvery: every QueueFullEvery-th batch gets
	// QUEUE_FULL:<QueueFullDelay> (not decoded, not handled).
	QueueFullEvery int
	// QueueFullDelay is the delay put in QUEUE_FULL replies. Default 500ms.
	QueueFullDelay time.Duration
	// ReplyDelay is slept before each batch reply.
	ReplyDelay time.Duration
	// AuthReply, when set, answers every __AUTH__ with this line without
	// checking the token (e.g. AUTH_FAILED); anything but ACK then closes.
	AuthReply string
	// BatchReply, when set, answers every batch with this line without
	// decoding or handling it (e.g. DECRYPT_FAILED, DECODE_FAILED).
	BatchReply string
	// Reject answers every new connection REJECTED at once, as if another
	// collector held the ingress.
	Reject bool
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.AuthTimeout <= 0 {
		c.AuthTimeout = time.Second
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = protocol.DefaultMaxRequestBytes
	}
	if c.RejectGrace == 0 {
		c.RejectGrace = 250 * time.Millisecond
	}
	if c.MaxHandshakes <= 0 {
		c.MaxHandshakes = 64
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 256
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks what has no default.
func (c Config) Validate() error {
	if c.MaxConnections < 0 {
		return fmt.Errorf("ingress max connections %d: must be 0 (one collector at a time) or more", c.MaxConnections)
	}
	if c.Deferred != nil && c.MaxConnections == 0 {
		return errors.New("ingress: a deferred handler needs multi-collector mode (MaxConnections > 0)")
	}
	if len(c.Tokens) == 0 {
		if err := protocol.CheckToken(c.Token); err != nil {
			return fmt.Errorf("ingress token: %w", err)
		}
		return nil
	}
	if c.MaxConnections == 0 {
		return errors.New("ingress tokens: named tokens need multi-collector mode (MaxConnections > 0)")
	}
	var errs []error
	seen := make(map[string]bool, len(c.Tokens))
	values := make(map[string]bool, len(c.Tokens))
	for i, t := range c.Tokens {
		switch {
		case strings.TrimSpace(t.Name) == "":
			errs = append(errs, fmt.Errorf("ingress tokens[%d]: the name is empty", i))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("ingress tokens[%d]: name %q is used twice", i, t.Name))
		}
		seen[t.Name] = true
		if err := protocol.CheckToken(t.Value); err != nil {
			errs = append(errs, fmt.Errorf("ingress tokens[%d] (%s): %w", i, t.Name, err))
		} else if values[t.Value] {
			errs = append(errs, fmt.Errorf("ingress tokens[%d] (%s): the same token is given to another name", i, t.Name))
		}
		values[t.Value] = true
	}
	return errors.Join(errs...)
}
