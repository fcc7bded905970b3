package edgesocket

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/ingress"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Input is a running edgesocket input. Open, Poll, Drain, Committed and
// Close are the scheduler's (one goroutine); the ingress sessions hand
// batches over through handle, from their own goroutines.
type Input struct {
	cfg       *Config
	log       *slog.Logger
	srv       *ingress.Server
	tlsConfig *tls.Config
	decoder   *codec.Decoder
	tokens    []ingress.Token
	// queueFull is the QUEUE_FULL reply, formatted once.
	queueFull         string
	addToken, addPeer bool
	maxPending        int
	wake              chan struct{}
	listenAddr        atomic.Pointer[string]
	stats             counters
	logQueueFull      rateWarn
	closeOnce         sync.Once
	closeErr          error

	// pendingMu guards the batches taken from collectors and not yet
	// polled, and whether the input still takes batches.
	pendingMu        sync.Mutex
	pending          []handoff
	pendingHead      int
	pendingBytes     int
	draining, closed bool
	// room, when set, is closed by the next Poll that takes batches: the
	// sessions waiting at the bound try again.
	room chan struct{}

	// unacked are the tickets of the batches polled, in Poll order,
	// awaiting Committed; the scheduler's goroutine only.
	unacked     []ingress.Ticket
	unackedHead int
}

// handoff is one batch between a session and the scheduler.
type handoff struct {
	payload []byte
	ticket  ingress.Ticket
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
	if in.decoder, err = codec.NewDecoder(cfg.PacketMode, key, codec.WithMaxDecodedSize(cfg.MaxLineBytes)); err != nil {
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
	srv, err := ingress.New(ingress.Config{
		Addr:           in.cfg.Listen,
		Tokens:         in.tokens,
		Decoder:        in.decoder,
		Deferred:       in.handle,
		Logger:         in.log,
		TLS:            in.tlsConfig,
		MaxConnections: in.cfg.MaxConnections,
		MaxLineBytes:   in.cfg.MaxLineBytes,
		MaxInFlight:    in.cfg.MaxInFlight,
		ReadTimeout:    in.cfg.ReadTimeout,
		IdleTimeout:    in.cfg.IdleTimeout,
		WriteTimeout:   in.cfg.WriteTimeout,
	})
	if err != nil {
		return fmt.Errorf("edgesocket input: %w", err)
	}
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("edgesocket input: %w", err)
	}
	in.srv = srv
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

// handle takes one decoded batch from a session. At the bound it waits,
// up to queue-full-retry-ms, for a poll to make room: the wait holds only
// this connection's reader (its collector's socket then backs up, which
// is fair across collectors), never the scheduler. If no room comes, and
// at once once the input stops taking batches, the batch is answered
// QUEUE_FULL and the sender retries after the delay.
func (in *Input) handle(p ingress.Peer, _ int64, record []byte, t ingress.Ticket) {
	payload := in.event(p, record)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		in.pendingMu.Lock()
		if in.draining || in.closed {
			in.pendingMu.Unlock()
			in.refuse(t)
			return
		}
		if in.pendingBytes+len(payload) <= in.maxPending || in.pendingBytes == 0 {
			in.pending = append(in.pending, handoff{payload: payload, ticket: t})
			in.pendingBytes += len(payload)
			in.pendingMu.Unlock()
			select {
			case in.wake <- struct{}{}:
			default:
			}
			return
		}
		if in.room == nil {
			in.room = make(chan struct{})
		}
		room := in.room
		in.pendingMu.Unlock()
		if timer == nil {
			timer = time.NewTimer(in.cfg.QueueFullRetry)
		}
		select {
		case <-room:
		case <-timer.C:
			in.refuse(t)
			return
		}
	}
}

// refuse answers QUEUE_FULL.
func (in *Input) refuse(t ingress.Ticket) {
	in.stats.queueFull.Add(1)
	in.logQueueFull.warn(in.log, "relay queue at its bound (max-pending-bytes, or the relay's own queue is full); answering QUEUE_FULL",
		slog.Int("max_pending_bytes", in.maxPending))
	t.Done(in.queueFull)
}

// event copies record (it is reused after handle returns), adding the
// fields add-fields asks for to a JSON object.
func (in *Input) event(p ingress.Peer, record []byte) []byte {
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
		out = strconv.AppendQuote(out, p.Name)
		out = append(out, ',')
	}
	if in.addPeer {
		out = append(out, `"`+keyPeerAddress+`":`...)
		out = strconv.AppendQuote(out, p.Remote)
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
	if n > 0 && in.room != nil {
		close(in.room)
		in.room = nil
	}
	in.pendingMu.Unlock()
	return dst, nil
}

// Committed answers RECEIVED to the next n batches polled: the scheduler
// has stored them.
func (in *Input) Committed(n int) {
	end := min(in.unackedHead+n, len(in.unacked))
	ingress.DoneAll(in.unacked[in.unackedHead:end], protocol.ReplyReceived)
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
	if in.room != nil {
		close(in.room)
		in.room = nil
	}
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
		if in.room != nil {
			close(in.room)
			in.room = nil
		}
		in.pendingMu.Unlock()
		if in.srv != nil {
			if err := in.srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				in.closeErr = fmt.Errorf("edgesocket input: close listener: %w", err)
			}
		}
	})
	return in.closeErr
}

// Wakeup fires when a batch was handed over.
func (in *Input) Wakeup() <-chan struct{} { return in.wake }
