package syslog

import (
	"context"
	"crypto/tls"
	"fmt"
	"github.com/edge-agent/edge-agent/connector/syslog/message"
	"log/slog"
	"net"
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
	m, perr := message.Parse(msg, in.cfg.Format)
	if in.cfg.Strict && !message.WellFormed(msg, &m, perr) {
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
