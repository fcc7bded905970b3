package syslog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// handshakeTimeout bounds a TLS handshake whatever idle-timeout-ms says.
const handshakeTimeout = 30 * time.Second

// refusedLogEvery spaces the WARN lines for connections over the cap.
const refusedLogEvery = time.Minute

// Input is a syslog listener. Open, Poll, Drain and Close are called by
// one goroutine (the scheduler); its reader goroutines only fill the
// queue. Stats and Addr are safe from any goroutine.
type Input struct {
	cfg    Config // normalised: lower-case enums
	log    *slog.Logger
	tlsCfg *tls.Config
	q      *queue

	ln   net.Listener
	pc   *net.UDPConn
	addr atomic.Pointer[net.Addr]

	// done is closed by stop: readers end, pushes stop waiting. It, ln
	// and pc are replaced only by the scheduler's goroutine, after every
	// reader of the previous listener has ended.
	done chan struct{}
	wg   sync.WaitGroup
	// stopped: not listening (after Drain or Close); closed: after Close.
	// relistenAt: when Poll next tries to listen again after a Drain that
	// was not followed by Close (a reload that failed keeps this input).
	stopped, closed bool
	relistenAt      time.Time

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	lastRefusedLog atomic.Int64 // unix nanos

	st counters
}

type counters struct {
	messages, bytes, events, truncated, invalid, errors atomic.Int64
	conns, connsTotal, refused, parseErrors, dropped    atomic.Int64
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
)

// New checks cfg and builds the input; nothing listens before Open.
func New(cfg *Config, set input.Settings) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("syslog input: %w", err)
	}
	c := *cfg
	c.Protocol = strings.ToLower(strings.TrimSpace(c.Protocol))
	c.Format = strings.ToLower(c.Format)
	c.Payload = strings.ToLower(c.Payload)
	c.Listen = strings.TrimSpace(c.Listen)
	log := set.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Input{cfg: c, log: log, q: newQueue(c.QueueBytes), done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	if c.Protocol == ProtoTLS {
		t, err := c.TLS.load()
		if err != nil {
			return nil, fmt.Errorf("syslog input: %w", err)
		}
		in.tlsCfg = t
	}
	return in, nil
}

// Open binds the listener and starts reading. Syslog keeps no positions.
func (in *Input) Open(ctx context.Context, _ input.OpenOptions) error {
	return in.listen(ctx)
}

func (in *Input) listen(ctx context.Context) error {
	var lc net.ListenConfig
	if in.cfg.Protocol == ProtoUDP {
		pc, err := lc.ListenPacket(ctx, "udp", in.cfg.Listen)
		if err != nil {
			return fmt.Errorf("syslog input: listen udp %s: %w", in.cfg.Listen, err)
		}
		in.pc = pc.(*net.UDPConn)
		// A larger socket buffer rides out bursts while the queue is
		// full; the kernel caps it (net.core.rmem_max).
		_ = in.pc.SetReadBuffer(4 << 20)
		a := in.pc.LocalAddr()
		in.addr.Store(&a)
		in.wg.Add(1)
		go in.readUDP(in.pc)
	} else {
		ln, err := lc.Listen(ctx, "tcp", in.cfg.Listen)
		if err != nil {
			return fmt.Errorf("syslog input: listen %s %s: %w", in.cfg.Protocol, in.cfg.Listen, err)
		}
		in.ln = ln
		a := ln.Addr()
		in.addr.Store(&a)
		in.wg.Add(1)
		go in.accept(in.ln)
	}
	in.log.Info("syslog listening", slog.String("protocol", in.cfg.Protocol), slog.String("listen", in.Addr().String()))
	return nil
}

// Addr is the bound address (the port the kernel chose for ":0"); nil
// before Open.
func (in *Input) Addr() net.Addr {
	if a := in.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// Poll hands over up to max received messages; it never waits (but for
// a bind after a Drain, below).
func (in *Input) Poll(ctx context.Context, dst []input.Event, max int) ([]input.Event, error) {
	if in.stopped && !in.closed && !time.Now().Before(in.relistenAt) {
		in.relisten(ctx)
	}
	dst, n := in.q.take(dst, max)
	in.st.events.Add(int64(n))
	return dst, nil
}

// Drain stops listening, lets every reader finish the message it holds,
// and hands over everything still queued, so a graceful stop, or a reload
// that rebuilds this input (and binds the address again), loses nothing
// the input read. Bytes still in socket buffers are not read. Polled
// again without a Close (the reload failed and keeps this input), the
// input listens again, retrying every relistenEvery.
func (in *Input) Drain(dst []input.Event) []input.Event {
	in.stop()
	dst, n := in.q.take(dst, int(^uint(0)>>1))
	in.st.events.Add(int64(n))
	return dst
}

// Close stops the listener and the readers; idempotent. Messages still
// queued are dropped (Drain hands them over first).
func (in *Input) Close() error {
	in.closed = true
	in.stop()
	return nil
}

// relistenEvery spaces the attempts to listen again after a Drain.
const relistenEvery = time.Second

func (in *Input) relisten(ctx context.Context) {
	// The address bound before: the same port also when listen said :0.
	in.cfg.Listen = in.Addr().String()
	in.done = make(chan struct{})
	in.stopped = false
	if err := in.listen(ctx); err != nil {
		close(in.done)
		in.stopped, in.relistenAt = true, time.Now().Add(relistenEvery)
		in.st.errors.Add(1)
		in.log.Warn("syslog: cannot listen again after a drain; retrying", slog.Any("error", err), slog.Duration("retry_in", relistenEvery))
	}
}

// Wakeup fires when messages were queued.
func (in *Input) Wakeup() <-chan struct{} { return in.q.wake }

// Stats are the counters since New.
func (in *Input) Stats() input.Stats {
	s := &in.st
	return input.Stats{
		LinesRead: s.messages.Load(), BytesRead: s.bytes.Load(), Events: s.events.Load(),
		TruncatedLines: s.truncated.Load(), InvalidSequences: s.invalid.Load(), Errors: s.errors.Load(),
		Connections: s.conns.Load(), ConnectionsTotal: s.connsTotal.Load(), ConnectionsRefused: s.refused.Load(),
		ParseErrors: s.parseErrors.Load(), DroppedQueueFull: s.dropped.Load(),
	}
}

// stop ends listening and every reader, and waits for them.
func (in *Input) stop() {
	if in.stopped {
		return
	}
	in.stopped = true
	close(in.done)
	if in.ln != nil {
		_ = in.ln.Close()
		in.ln = nil
	}
	if in.pc != nil {
		_ = in.pc.Close()
		in.pc = nil
	}
	in.mu.Lock()
	for c := range in.conns {
		_ = c.Close()
	}
	in.mu.Unlock()
	in.wg.Wait()
}

func (in *Input) stopping() bool {
	select {
	case <-in.done:
		return true
	default:
		return false
	}
}

// accept serves connections until the listener closes. Temporary accept
// failures (out of descriptors) are retried with a capped backoff.
func (in *Input) accept(ln net.Listener) {
	defer in.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			if in.stopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			in.st.errors.Add(1)
			in.log.Warn("syslog accept failed; retrying", slog.Any("error", err), slog.Duration("backoff", backoff))
			select {
			case <-in.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if !in.track(c) {
			continue
		}
		in.wg.Add(1)
		go in.serve(c)
	}
}

// track registers c, or closes it when max-connections are open.
func (in *Input) track(c net.Conn) bool {
	in.mu.Lock()
	full := len(in.conns) >= in.cfg.MaxConnections
	if !full && !in.stopping() {
		in.conns[c] = struct{}{}
	}
	in.mu.Unlock()
	if full || in.stopping() {
		if full {
			// Counted before the close: whoever sees the close sees it
			// counted.
			in.st.refused.Add(1)
		}
		_ = c.Close()
		if full {
			now := time.Now().UnixNano()
			if last := in.lastRefusedLog.Load(); now-last >= int64(refusedLogEvery) && in.lastRefusedLog.CompareAndSwap(last, now) {
				in.log.Warn("syslog connection refused: max-connections are open (logged at most once a minute)",
					slog.String("peer", c.RemoteAddr().String()), slog.Int("max_connections", in.cfg.MaxConnections),
					slog.Int64("refused_total", in.st.refused.Load()))
			}
		}
		return false
	}
	in.st.conns.Add(1)
	in.st.connsTotal.Add(1)
	return true
}

func (in *Input) untrack(c net.Conn) {
	in.mu.Lock()
	delete(in.conns, c)
	in.mu.Unlock()
	in.st.conns.Add(-1)
	_ = c.Close()
}

// serve reads one connection's messages until it ends. A framing error
// closes it, logged with the reason: the stream cannot be resynchronised.
func (in *Input) serve(c net.Conn) {
	defer in.wg.Done()
	defer in.untrack(c)
	peer := c.RemoteAddr().String()
	var r io.Reader = c
	if in.tlsCfg != nil {
		tc := tls.Server(c, in.tlsCfg)
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			if !in.stopping() {
				in.st.errors.Add(1)
				in.log.Warn("syslog TLS handshake failed", slog.String("peer", peer), slog.Any("error", err))
			}
			return
		}
		r = tc
	}
	if in.cfg.IdleTimeout > 0 {
		r = &idleReader{r: r, c: c, idle: in.cfg.IdleTimeout}
	}
	fr := newFramer(r, in.cfg.MaxMessageBytes)
	h := in.newHandler(peer)
	for {
		msg, cut, err := fr.Next()
		if err != nil {
			in.connEnded(peer, err)
			return
		}
		h.handle(msg, cut, true)
	}
}

// connEnded logs why a connection ended, unless it was closed by its
// sender or by stop.
func (in *Input) connEnded(peer string, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), in.stopping(), errors.Is(err, net.ErrClosed):
		in.log.Debug("syslog connection closed", slog.String("peer", peer))
	case errors.As(err, &ne) && ne.Timeout():
		in.log.Info("syslog connection idle for idle-timeout-ms; closed", slog.String("peer", peer),
			slog.Duration("idle_timeout", in.cfg.IdleTimeout))
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrBadOctetCount), errors.Is(err, ErrTruncatedFrame):
		in.st.errors.Add(1)
		in.log.Warn("syslog connection closed: bad framing", slog.String("peer", peer), slog.Any("error", err),
			slog.Int("max_message_bytes", in.cfg.MaxMessageBytes))
	default:
		in.st.errors.Add(1)
		in.log.Warn("syslog connection failed", slog.String("peer", peer), slog.Any("error", err))
	}
}

// idleReader sets the read deadline before each read.
type idleReader struct {
	r    io.Reader
	c    net.Conn
	idle time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	if err := r.c.SetReadDeadline(time.Now().Add(r.idle)); err != nil {
		return 0, fmt.Errorf("set read deadline: %w", err)
	}
	return r.r.Read(p)
}

// readUDP reads datagrams until the socket closes. It never waits for the
// queue: a datagram that finds it full is dropped and counted.
func (in *Input) readUDP(pc *net.UDPConn) {
	defer in.wg.Done()
	buf := make([]byte, in.cfg.MaxMessageBytes+1)
	h := in.newHandler("")
	var last string
	for {
		n, addr, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if in.stopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			in.st.errors.Add(1)
			in.log.Warn("syslog udp read failed", slog.Any("error", err))
			continue
		}
		if s := addr.String(); s != last {
			last = s
			h.setPeer(s)
		}
		cut := n > in.cfg.MaxMessageBytes
		h.handle(buf[:min(n, in.cfg.MaxMessageBytes)], cut, false)
	}
}

// handler turns messages of one reader into queued events.
type handler struct {
	in   *Input
	enc  encoder
	peer []byte // JSON string literal
}

func (in *Input) newHandler(peer string) *handler {
	h := &handler{in: in, enc: encoder{raw: in.cfg.Payload == PayloadRaw}}
	h.setPeer(peer)
	return h
}

func (h *handler) setPeer(p string) { h.peer, _ = jsonenc.AppendString(h.peer[:0], []byte(p)) }

// handle parses msg and queues its event: waiting for room when wait (a
// stream: the sender is slowed down), else dropping when full.
func (h *handler) handle(msg []byte, cut, wait bool) {
	msg = trimEOL(msg)
	if len(msg) == 0 {
		return
	}
	in := h.in
	in.st.messages.Add(1)
	in.st.bytes.Add(int64(len(msg)))
	if cut {
		in.st.truncated.Add(1)
	}
	m, perr := Parse(msg, in.cfg.Format)
	if perr != nil {
		in.st.parseErrors.Add(1)
	}
	ev := h.enc.appendEvent(make([]byte, 0, len(msg)+len(msg)/8+256), msg, h.peer, time.Now(), &m, perr)
	if h.enc.invalid > 0 {
		in.st.invalid.Add(h.enc.invalid)
		h.enc.invalid = 0
	}
	if wait {
		in.q.push(ev, in.done)
		return
	}
	if !in.q.tryPush(ev) {
		in.st.dropped.Add(1)
	}
}

// trimEOL drops a trailing LF (and a CR before it) some senders put
// inside octet-counted frames and datagrams.
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return trimCR(b)
}
