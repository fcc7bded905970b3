package syslog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

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

	budget *budget
	// pen is set with mutual TLS: refused client certificates slow their
	// source down.
	pen  *penalty
	logs *logLimiter

	st counters
}

type counters struct {
	messages, bytes, events, truncated, invalid, errors atomic.Int64
	connsTotal, refused, parseErrors, dropped           atomic.Int64
	evicted, timedOut, authNoCert, authBadCert          atomic.Int64
	malformed, rcvDrops                                 atomic.Int64
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
	in := &Input{cfg: c, log: log, q: newQueue(c.QueueBytes), done: make(chan struct{}),
		budget: newBudget(c.MaxConnections, c.MaxConnectionsPerSource), logs: newLogLimiter(log, c.LogInterval)}
	if c.Protocol == ProtoTLS {
		t, err := c.TLS.load()
		if err != nil {
			return nil, fmt.Errorf("syslog input: %w", err)
		}
		in.tlsCfg = t
		if t.ClientCAs != nil {
			in.pen = newPenalty(c.AuthFailureMaxDelay)
		}
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
		in.tuneUDP(in.pc)
		a := in.pc.LocalAddr()
		in.addr.Store(&a)
		in.wg.Add(2)
		go in.readUDP(in.pc)
		go in.report(in.done)
	} else {
		ln, err := lc.Listen(ctx, "tcp", in.cfg.Listen)
		if err != nil {
			return fmt.Errorf("syslog input: listen %s %s: %w", in.cfg.Protocol, in.cfg.Listen, err)
		}
		in.serveListener(ln)
	}
	in.log.Info("syslog listening", slog.String("protocol", in.cfg.Protocol), slog.String("listen", in.Addr().String()))
	return nil
}

// serveListener accepts TCP/TLS connections from ln until stop.
func (in *Input) serveListener(ln net.Listener) {
	in.ln = ln
	a := ln.Addr()
	in.addr.Store(&a)
	in.budget.reopen()
	in.wg.Add(2)
	go in.accept(ln)
	go in.report(in.done)
}

// tuneUDP sets the receive buffer and asks for the kernel's drop count;
// neither failing stops the input.
func (in *Input) tuneUDP(pc *net.UDPConn) {
	if want := in.cfg.ReceiveBufferBytes; want > 0 {
		if err := pc.SetReadBuffer(want); err != nil {
			in.log.Warn("syslog udp: cannot set receive-buffer-bytes", slog.Int("receive_buffer_bytes", want), slog.Any("error", err))
		} else if got, err := receiveBuffer(pc); err == nil && got < want {
			in.log.Warn("syslog udp: the kernel capped receive-buffer-bytes; raise net.core.rmem_max to get more",
				slog.Int("receive_buffer_bytes", want), slog.Int("granted_bytes", got))
		}
	}
	if err := enableDropCount(pc); err != nil {
		in.log.Debug("syslog udp: datagrams the kernel drops are not counted", slog.Any("error", err))
	}
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
		Connections: int64(in.budget.open()), ConnectionsTotal: s.connsTotal.Load(), ConnectionsRefused: s.refused.Load(),
		ParseErrors: s.parseErrors.Load(), DroppedQueueFull: s.dropped.Load(),
		ConnectionsEvicted: s.evicted.Load(), ConnectionsTimedOut: s.timedOut.Load(),
		AuthFailedNoCert: s.authNoCert.Load(), AuthFailedBadCert: s.authBadCert.Load(),
		DroppedMalformed: s.malformed.Load(), DroppedReceiveBuffer: s.rcvDrops.Load(),
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
	in.budget.closeAll()
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
		if s := in.admit(c); s != nil {
			in.wg.Add(1)
			go in.serve(s)
		}
	}
}

// admit registers c in the budget, evicting a silent connection for it
// or closing it (counted, and logged within the log limit).
func (in *Input) admit(c net.Conn) *slot {
	s, ev, why := in.budget.admit(c)
	if ev != nil {
		// Counted before the close: whoever sees the close sees it
		// counted.
		in.st.evicted.Add(1)
		_ = ev.c.Close()
		in.logs.warn(logEvicted, "syslog: connection budget full; a connection that had sent nothing was closed for a new one",
			slog.String("evicted_peer", ev.c.RemoteAddr().String()), slog.Int("max_connections", in.cfg.MaxConnections),
			slog.Int("max_connections_per_source", in.cfg.MaxConnectionsPerSource), slog.Int64("evicted_total", in.st.evicted.Load()))
	}
	if why == admitted {
		in.st.connsTotal.Add(1)
		return s
	}
	if why != refusedStopping {
		in.st.refused.Add(1)
	}
	_ = c.Close()
	switch why {
	case refusedFull:
		in.logs.warn(logRefused, "syslog connection refused: max-connections are open and every one has sent data",
			slog.String("peer", c.RemoteAddr().String()), slog.Int("max_connections", in.cfg.MaxConnections),
			slog.Int64("refused_total", in.st.refused.Load()))
	case refusedSource:
		in.logs.warn(logRefused, "syslog connection refused: its source has max-connections-per-source open, each having sent data",
			slog.String("peer", c.RemoteAddr().String()), slog.Int("max_connections_per_source", in.cfg.MaxConnectionsPerSource),
			slog.Int64("refused_total", in.st.refused.Load()))
	}
	return nil
}

// serve reads one connection's messages until it ends. A framing error
// closes it, logged with the reason: the stream cannot be resynchronised.
func (in *Input) serve(s *slot) {
	defer in.wg.Done()
	c := s.c
	defer func() {
		in.budget.release(s)
		_ = c.Close()
	}()
	peer := c.RemoteAddr().String()
	if in.pen != nil {
		if d := in.pen.wait(s.src, time.Now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-in.done:
				t.Stop()
				return
			case <-s.gone:
				t.Stop()
				return
			}
		}
	}
	// One deadline for the handshake and the first byte of data.
	if err := c.SetDeadline(time.Now().Add(in.cfg.FirstByteTimeout)); err != nil {
		in.connEnded(s, peer, err, false)
		return
	}
	var r io.Reader = c
	if in.tlsCfg != nil {
		tc := tls.Server(&firstByteConn{Conn: c, first: func() { in.budget.handshaking(s) }}, in.tlsCfg)
		if err := tc.Handshake(); err != nil {
			in.handshakeFailed(s, peer, err)
			return
		}
		if in.pen != nil {
			in.pen.succeeded(s.src)
		}
		_ = c.SetWriteDeadline(time.Time{})
		r = tc
	}
	cr := &connReader{r: r, c: c, idle: in.cfg.IdleTimeout, spoke: func() { in.budget.spoke(s) }}
	fr := newFramer(cr, in.cfg.MaxMessageBytes)
	h := in.newHandler(peer)
	for {
		msg, cut, err := fr.Next()
		if err != nil {
			in.connEnded(s, peer, err, cr.started)
			return
		}
		h.handle(msg, cut, true)
	}
}

// handshakeFailed counts a failed TLS handshake: a refused client
// certificate slows its source down; a silent client is a timeout.
func (in *Input) handshakeFailed(s *slot, peer string, err error) {
	var ne net.Error
	var verr *tls.CertificateVerificationError
	switch {
	case in.stopping() || errors.Is(err, net.ErrClosed) || isClosed(s.gone):
	case errors.As(err, &ne) && ne.Timeout():
		in.st.timedOut.Add(1)
		in.log.Debug("syslog TLS handshake not done within first-byte-timeout-ms; closed", slog.String("peer", peer))
	case errors.Is(err, io.EOF):
		// Closed by the client before a handshake: a port probe.
		in.log.Debug("syslog connection closed before its TLS handshake", slog.String("peer", peer))
	case in.pen != nil && errors.Is(err, errNoClientCert):
		in.st.authNoCert.Add(1)
		in.pen.failed(s.src, authNoCert, time.Now())
	case in.pen != nil && errors.As(err, &verr):
		in.st.authBadCert.Add(1)
		in.pen.failed(s.src, authBadCert, time.Now())
	default:
		in.st.errors.Add(1)
		in.logs.warn(logHandshake, "syslog TLS handshake failed", slog.String("peer", peer), slog.Any("error", err))
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// connEnded logs why a connection ended, unless it was closed by its
// sender, by an eviction or by stop; started says whether it had sent
// data.
func (in *Input) connEnded(s *slot, peer string, err error, started bool) {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), in.stopping(), errors.Is(err, net.ErrClosed), isClosed(s.gone):
		in.log.Debug("syslog connection closed", slog.String("peer", peer))
	case errors.As(err, &ne) && ne.Timeout() && !started:
		in.st.timedOut.Add(1)
		in.log.Debug("syslog connection sent nothing within first-byte-timeout-ms; closed", slog.String("peer", peer))
	case errors.As(err, &ne) && ne.Timeout():
		in.log.Info("syslog connection idle for idle-timeout-ms; closed", slog.String("peer", peer),
			slog.Duration("idle_timeout", in.cfg.IdleTimeout))
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrBadOctetCount), errors.Is(err, ErrTruncatedFrame):
		in.st.errors.Add(1)
		in.logs.warn(logFraming, "syslog connection closed: bad framing", slog.String("peer", peer), slog.Any("error", err),
			slog.Int("max_message_bytes", in.cfg.MaxMessageBytes))
	default:
		in.st.errors.Add(1)
		in.logs.warn(logConnFail, "syslog connection failed", slog.String("peer", peer), slog.Any("error", err))
	}
}

// connReader holds the first-byte deadline until data arrives, then
// reports it (the connection can no longer be evicted) and keeps an idle
// deadline before each read (none when idle is 0).
type connReader struct {
	r       io.Reader
	c       net.Conn
	idle    time.Duration
	spoke   func()
	started bool
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.started && r.idle > 0 {
		if err := r.c.SetReadDeadline(time.Now().Add(r.idle)); err != nil {
			return 0, fmt.Errorf("set read deadline: %w", err)
		}
	}
	n, err := r.r.Read(p)
	if n > 0 && !r.started {
		r.started = true
		r.spoke()
		if r.idle == 0 {
			if derr := r.c.SetReadDeadline(time.Time{}); derr != nil && err == nil {
				err = fmt.Errorf("clear read deadline: %w", derr)
			}
		}
	}
	return n, err
}

// firstByteConn calls first once its first byte was read: a TLS client
// has begun its handshake.
type firstByteConn struct {
	net.Conn
	first func()
	seen  bool
}

func (c *firstByteConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.seen {
		c.seen = true
		c.first()
	}
	return n, err
}

// report logs, once per log-interval-ms until done, the lines held back
// and the client certificates refused.
func (in *Input) report(done <-chan struct{}) {
	defer in.wg.Done()
	t := time.NewTicker(in.cfg.LogInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			in.flushReports(true)
			return
		case <-t.C:
			in.flushReports(false)
		}
	}
}

func (in *Input) flushReports(all bool) {
	in.logs.flush(all)
	if in.pen == nil {
		return
	}
	r, ok := in.pen.report()
	if !ok {
		return
	}
	in.log.Warn("syslog: TLS client certificates refused (mutual TLS); their sources wait before each new handshake",
		slog.Int64(authNoCert, r.byReason[authNoCert]), slog.Int64(authBadCert, r.byReason[authBadCert]),
		slog.Int("sources", r.sources), slog.String("top_source", r.top.String()), slog.Int64("top_source_refused", r.topCount),
		slog.Duration("interval", in.cfg.LogInterval), slog.Duration("max_delay", in.cfg.AuthFailureMaxDelay))
}

// readUDP reads datagrams until the socket closes. It never waits for the
// queue: a datagram that finds it full is dropped and counted. The
// kernel's own drops come with the datagrams (where it tells them).
func (in *Input) readUDP(pc *net.UDPConn) {
	defer in.wg.Done()
	buf := make([]byte, in.cfg.MaxMessageBytes+1)
	var oob []byte
	if n := dropsOOBLen(); n > 0 {
		oob = make([]byte, n)
	}
	var kernelDrops uint32 // this socket's count as last seen
	h := in.newHandler("")
	var last netip.AddrPort
	for {
		var n, oobn int
		var addr netip.AddrPort
		var err error
		if oob != nil {
			n, oobn, _, addr, err = pc.ReadMsgUDPAddrPort(buf, oob)
		} else {
			n, addr, err = pc.ReadFromUDPAddrPort(buf)
		}
		if err != nil {
			if in.stopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			in.st.errors.Add(1)
			in.logs.warn(logConnFail, "syslog udp read failed", slog.Any("error", err))
			continue
		}
		if oobn > 0 {
			if v, ok := parseDropCount(oob[:oobn]); ok && v != kernelDrops {
				in.st.rcvDrops.Add(int64(v - kernelDrops)) // uint32 arithmetic: the kernel's count wraps
				kernelDrops = v
			}
		}
		if addr != last {
			last = addr
			h.setPeer(addr.String())
		}
		cut := n > in.cfg.MaxMessageBytes
		h.handle(buf[:min(n, in.cfg.MaxMessageBytes)], cut, false)
	}
}

// handler turns messages of one reader into queued events.
type handler struct {
	in       *Input
	enc      encoder
	peer     []byte // JSON string literal
	peerText string
}

func (in *Input) newHandler(peer string) *handler {
	h := &handler{in: in, enc: encoder{raw: in.cfg.Payload == PayloadRaw}}
	h.setPeer(peer)
	return h
}

func (h *handler) setPeer(p string) {
	h.peerText = p
	h.peer, _ = jsonenc.AppendString(h.peer[:0], []byte(p))
}

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
	if in.cfg.Strict && !wellFormed(msg, &m, perr) {
		in.st.malformed.Add(1)
		in.logs.warn(logMalformed, "syslog message dropped: not well-formed RFC 5424 or RFC 3164 (strict)",
			slog.String("peer", h.peerText), slog.Int("bytes", len(msg)))
		return
	}
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
