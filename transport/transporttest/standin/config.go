package standin

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Handler receives each record the engine model accepted (answered
// RECEIVED), decoded, as the job's downstream would. record is reused
// after the call returns: copy it to keep it. It runs under the model
// source's lock and must not call Server.Source.
type Handler func(batchID int64, record []byte)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Addr to listen on. Default "127.0.0.1:0" (a free loopback port).
	Addr string
	// Token the collector must present. Required.
	Token string
	// Decoder decodes batch payloads; nil passes them through (RAW).
	Decoder *codec.Decoder
	// Handler receives every accepted record; nil discards them.
	Handler Handler
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
	// RejectGrace is how long a new connection waits for a busy ingress
	// before it gets REJECTED. Default 250ms; negative means no wait.
	RejectGrace time.Duration

	_ struct{} // forces keyed literals, so fields can be added
}

// Faults are failures to inject, on top of the engine model's answers.
// Counters are server-wide counts of __BATCH__ lines (resends and
// malformed ones included), so "every N" keeps firing across reconnects.
// Zero values inject nothing.
type Faults struct {
	// CutAfter: every CutAfter-th batch is answered by the engine model
	// (a record it accepts reaches the Handler), then the connection is
	// closed without the reply, as when a link dies after the engine
	// took a batch. The collector resends it: a duplicate. A value of 1
	// cuts every batch, so a collector never makes progress.
	CutAfter int
	// RetryEvery: every RetryEvery-th batch gets RETRY without reaching
	// the model.
	RetryEvery int
	// QueueFullEvery: every QueueFullEvery-th batch gets
	// QUEUE_FULL:<QueueFullDelay> without reaching the model.
	QueueFullEvery int
	// QueueFullDelay is the delay put in QUEUE_FULL replies. Default 500ms.
	QueueFullDelay time.Duration
	// ReplyDelay is slept before each batch reply.
	ReplyDelay time.Duration
	// AuthReply, when set, answers every __AUTH__ with this line without
	// checking the token (e.g. AUTH_FAILED); anything but ACK then closes.
	AuthReply string
	// BatchReply, when set, answers every batch with this line without
	// the model seeing it (e.g. DECRYPT_FAILED, or QUEUE_FULL:<ms> to
	// take no more).
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks what has no default.
func (c Config) Validate() error {
	if err := protocol.CheckToken(c.Token); err != nil {
		return fmt.Errorf("stand-in token: %w", err)
	}
	return nil
}
