package edgesocket

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
	"github.com/edge-agent/edge-agent/transport/ratelog"
	"github.com/edge-agent/edge-agent/transport/relay"
)

// Input is a running edgesocket input. Open, Poll, Drain, Committed and
// Close are the scheduler's (one goroutine); the relay's sessions hand
// batches over through handle, from their own goroutines.
type Input struct {
	cfg       *Config
	log       *slog.Logger
	srv       atomic.Pointer[relay.Server] // set once Open listens; read by Stats concurrently
	tlsConfig *tls.Config
	decoder   *codec.Decoder
	tokens    []relay.Token
	// queueFull is the QUEUE_FULL reply, formatted once.
	queueFull         string
	addToken, addPeer bool
	maxPending        int
	wake              chan struct{}
	listenAddr        atomic.Pointer[string]
	stats             counters
	logQueueFull      ratelog.Warner
	closeOnce         sync.Once
	closeErr          error

	// pendingMu guards the batches taken from collectors and not yet
	// polled, and whether the input still takes batches.
	pendingMu        sync.Mutex
	pending          []handoff
	pendingHead      int
	pendingBytes     int
	draining, closed bool
	// waiters are the sessions waiting at the bound, in arrival order:
	// Poll admits them first come, first served, as room frees up, and a
	// newcomer queues behind them, so room does not go to whichever
	// session wakes first (under overload that starved some collectors).
	waiters []*waiter

	// unacked are the tickets of the batches polled, in Poll order,
	// awaiting Committed; the scheduler's goroutine only.
	unacked     []relay.Ticket
	unackedHead int
}

// waiter is a session's batch waiting for room. admitted and refused are
// under pendingMu; done is signalled once either is set.
type waiter struct {
	h                 handoff
	admitted, refused bool
	done              chan struct{}
}

// handoff is one batch between a session and the scheduler.
type handoff struct {
	payload []byte
	ticket  relay.Ticket
}

type counters struct {
	events, bytes, queueFull, committed atomic.Int64
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Acker         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
	_ input.PeersReporter = (*Input)(nil)
)

// New checks cfg and reads its files; nothing listens until Open.
func New(cfg *Config, set input.Settings) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := set.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Input{
		cfg: cfg, log: log,
		queueFull:  protocol.QueueFull(cfg.QueueFullRetry),
		maxPending: cfg.MaxPendingBytes,
		wake:       make(chan struct{}, 1),
	}
	in.addToken, in.addPeer = cfg.addFields()
	var err error
	if in.tokens, err = cfg.tokens(readFile); err != nil {
		return nil, err
	}
	key, err := cfg.key(readFile)
	if err != nil {
		return nil, err
	}
	opts := []codec.DecoderOption{codec.WithMaxDecodedSize(cfg.MaxLineBytes)}
	if key != nil && !cfg.AllowUnencrypted {
		opts = append(opts, codec.WithEncryptionRequired())
	}
	if in.decoder, err = codec.NewDecoder(cfg.PacketMode, key, opts...); err != nil {
		return nil, fmt.Errorf("edgesocket input: %w", err)
	}
	if cfg.TLS.Enabled() {
		if in.tlsConfig, err = serverTLS(cfg.TLS); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// serverTLS loads the certificate and, for mTLS, the client CAs.
func serverTLS(c TLSConfig) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, input.Errorf("tls", "load cert-file and key-file: %v", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.ClientCAFile != "" {
		pem, err := readFile(c.ClientCAFile)
		if err != nil {
			return nil, input.Errorf("tls.client-ca-file", "cannot read: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, input.Errorf("tls.client-ca-file", "%s holds no PEM certificate", c.ClientCAFile)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// Open starts listening. Saved positions do not apply: a relay resumes
// nothing, its senders resend what it did not store.
func (in *Input) Open(ctx context.Context, _ input.OpenOptions) error {
	srv, err := relay.New(relay.Config{
		Addr:                   in.cfg.Listen,
		Tokens:                 in.tokens,
		Decoder:                in.decoder,
		Handler:                in.handle,
		Logger:                 in.log,
		TLS:                    in.tlsConfig,
		MaxConnections:         in.cfg.MaxConnections,
		MaxLineBytes:           in.cfg.MaxLineBytes,
		MaxInFlight:            in.cfg.MaxInFlight,
		AuthTimeout:            in.cfg.AuthTimeout,
		MaxHandshakes:          in.cfg.MaxUnauthenticated,
		MaxHandshakesPerSource: in.cfg.MaxUnauthenticatedPerSource,
		AuthFailDelay:          in.cfg.AuthFailDelay,
		AuthFailDelayMax:       in.cfg.AuthFailDelayMax,
		AuthLogInterval:        in.cfg.AuthLogInterval,
		ReadTimeout:            in.cfg.ReadTimeout,
		IdleTimeout:            in.cfg.IdleTimeout,
		WriteTimeout:           in.cfg.WriteTimeout,
	})
	if err != nil {
		return fmt.Errorf("edgesocket input: %w", err)
	}
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("edgesocket input: %w", err)
	}
	in.srv.Store(srv)
	addr := srv.Addr()
	in.listenAddr.Store(&addr)
	in.log.Info("relay listening for collectors", slog.String("listen", addr),
		slog.Int("tokens", len(in.tokens)), slog.Bool("tls", in.tlsConfig != nil),
		slog.String("packet_mode", in.cfg.PacketMode.String()))
	return nil
}

// Addr is the address listened on once open ("" before).
func (in *Input) Addr() string {
	if p := in.listenAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// handle takes one decoded batch from a session. At the bound it queues,
// first come first served behind the batches already waiting, up to
// queue-full-retry-ms, for polls to make room: the wait holds only this
// connection's reader (its collector's socket then backs up), never the
// scheduler. If its turn does not come in time, and at once once the
// input stops taking batches, the batch is answered QUEUE_FULL and the
// sender retries after the delay.
func (in *Input) handle(p relay.Peer, _ int64, record []byte, t relay.Ticket) {
	payload := in.event(p, record)
	in.pendingMu.Lock()
	if in.draining || in.closed {
		in.pendingMu.Unlock()
		in.refuse(t)
		return
	}
	if len(in.waiters) == 0 && in.fits(len(payload)) {
		in.admit(handoff{payload: payload, ticket: t})
		in.pendingMu.Unlock()
		in.notify()
		return
	}
	w := &waiter{h: handoff{payload: payload, ticket: t}, done: make(chan struct{}, 1)}
	in.waiters = append(in.waiters, w)
	in.pendingMu.Unlock()
	timer := time.NewTimer(in.cfg.QueueFullRetry)
	defer timer.Stop()
	select {
	case <-w.done:
	case <-timer.C:
	}
	in.pendingMu.Lock()
	admitted := w.admitted
	if !admitted && !w.refused {
		in.dropWaiter(w)
	}
	in.pendingMu.Unlock()
	if !admitted {
		in.refuse(t)
	}
}

// fits reports whether n more bytes stay within max-pending-bytes (one
// batch always fits an empty queue). pendingMu is held.
func (in *Input) fits(n int) bool {
	return in.pendingBytes+n <= in.maxPending || in.pendingBytes == 0
}

// admit appends h to the batches awaiting Poll. pendingMu is held.
func (in *Input) admit(h handoff) {
	in.pending = append(in.pending, h)
	in.pendingBytes += len(h.payload)
}

func (in *Input) notify() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// admitWaiters admits the waiting batches in arrival order while they
// fit. pendingMu is held.
func (in *Input) admitWaiters() {
	n := 0
	for n < len(in.waiters) && in.fits(len(in.waiters[n].h.payload)) {
		w := in.waiters[n]
		in.admit(w.h)
		w.admitted = true
		w.done <- struct{}{}
		n++
	}
	if n > 0 {
		in.waiters = in.waiters[:copy(in.waiters, in.waiters[n:])]
		clear(in.waiters[len(in.waiters):cap(in.waiters)][:n])
	}
}

// refuseWaiters answers every waiting batch QUEUE_FULL (the input stops
// taking batches). pendingMu is held; the sessions answer.
func (in *Input) refuseWaiters() {
	for _, w := range in.waiters {
		w.refused = true
		w.done <- struct{}{}
	}
	clear(in.waiters)
	in.waiters = in.waiters[:0]
}

// dropWaiter removes w, whose wait timed out. pendingMu is held.
func (in *Input) dropWaiter(w *waiter) {
	for i, x := range in.waiters {
		if x == w {
			in.waiters = append(in.waiters[:i], in.waiters[i+1:]...)
			in.waiters[len(in.waiters):cap(in.waiters)][0] = nil
			return
		}
	}
}

// refuse answers QUEUE_FULL.
func (in *Input) refuse(t relay.Ticket) {
	in.stats.queueFull.Add(1)
	in.logQueueFull.Warn(in.log, "relay queue at its bound (max-pending-bytes, or the relay's own queue is full); answering QUEUE_FULL",
		slog.Int("max_pending_bytes", in.maxPending))
	t.Done(in.queueFull)
}

// event copies record (it is reused after handle returns), adding the
// fields add-fields asks for to a JSON object.
func (in *Input) event(p relay.Peer, record []byte) []byte {
	if !in.addToken && !in.addPeer {
		return append([]byte(nil), record...)
	}
	i := 0
	for i < len(record) && (record[i] == ' ' || record[i] == '\t') {
		i++
	}
	if i >= len(record) || record[i] != '{' {
		return append([]byte(nil), record...) // not an object: as it is
	}
	out := make([]byte, 0, len(record)+len(p.Name)+len(p.Remote)+40)
	out = append(out, record[:i+1]...)
	if in.addToken {
		out = append(out, `"`+keyTokenName+`":`...)
		// JSON, not Go, quoting: a name from a tokens-file may hold a
		// control byte or invalid UTF-8, which Go quoting spells \x..
		out, _ = jsonenc.AppendString(out, []byte(p.Name))
		out = append(out, ',')
	}
	if in.addPeer {
		out = append(out, `"`+keyPeerAddress+`":`...)
		out, _ = jsonenc.AppendString(out, []byte(p.Remote))
		out = append(out, ',')
	}
	rest := record[i+1:]
	if j := firstNonSpace(rest); j >= len(rest) || rest[j] == '}' {
		out = out[:len(out)-1] // an empty object: no trailing comma
	}
	return append(out, rest...)
}

func firstNonSpace(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// Poll hands up to max batches to the scheduler, never waiting.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	in.pendingMu.Lock()
	n := min(max, len(in.pending)-in.pendingHead)
	for _, h := range in.pending[in.pendingHead : in.pendingHead+n] {
		dst = append(dst, input.Event{Payload: h.payload})
		in.pendingBytes -= len(h.payload)
		in.unacked = append(in.unacked, h.ticket)
		in.stats.events.Add(1)
		in.stats.bytes.Add(int64(len(h.payload)))
	}
	clear(in.pending[in.pendingHead : in.pendingHead+n])
	in.pendingHead += n
	if in.pendingHead == len(in.pending) {
		in.pending, in.pendingHead = in.pending[:0], 0
	} else if in.pendingHead > len(in.pending)/2 {
		in.pending = in.pending[:copy(in.pending, in.pending[in.pendingHead:])]
		in.pendingHead = 0
	}
	if n > 0 && len(in.waiters) > 0 && !in.draining && !in.closed {
		in.admitWaiters()
		if len(in.pending) > 0 {
			in.notify()
		}
	}
	in.pendingMu.Unlock()
	return dst, nil
}

// Committed answers RECEIVED to the next n batches polled: the scheduler
// has stored them.
func (in *Input) Committed(n int) {
	end := min(in.unackedHead+n, len(in.unacked))
	relay.DoneAll(in.unacked[in.unackedHead:end], protocol.ReplyReceived)
	in.stats.committed.Add(int64(end - in.unackedHead))
	clear(in.unacked[in.unackedHead:end])
	in.unackedHead = end
	if in.unackedHead == len(in.unacked) {
		in.unacked, in.unackedHead = in.unacked[:0], 0
	} else if in.unackedHead > len(in.unacked)/2 {
		in.unacked = in.unacked[:copy(in.unacked, in.unacked[in.unackedHead:])]
		in.unackedHead = 0
	}
}

// Drain hands over every batch taken and stops taking more: the
// scheduler stores them before Close, so their senders get RECEIVED.
func (in *Input) Drain(dst []input.Event) []input.Event {
	in.pendingMu.Lock()
	in.draining = true
	in.refuseWaiters()
	left := len(in.pending) - in.pendingHead
	in.pendingMu.Unlock()
	dst, _ = in.Poll(context.Background(), dst, left) // Poll never fails
	return dst
}

// Close stops listening and ends every session; batches not stored get
// no reply (their senders resend them). Idempotent.
func (in *Input) Close() error {
	in.closeOnce.Do(func() {
		in.pendingMu.Lock()
		in.closed = true
		in.pending, in.pendingHead, in.pendingBytes = nil, 0, 0
		in.refuseWaiters()
		in.pendingMu.Unlock()
		if srv := in.srv.Load(); srv != nil {
			if err := srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				in.closeErr = fmt.Errorf("edgesocket input: close listener: %w", err)
			}
		}
	})
	return in.closeErr
}

// Wakeup fires when a batch was handed over.
func (in *Input) Wakeup() <-chan struct{} { return in.wake }
