package relay

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/internal/linger"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// pipe is one authenticated collector. Its
// goroutine reads requests into a ring of reply slots; the replies leave
// in ring order as the slots become ready. Whoever makes the head slot
// ready (a deferred batch's Ticket, or the reader for a reply known at
// once) writes the ready replies itself, without blocking: on plain TCP a
// non-blocking write, which takes everything while the collector reads
// its replies (they are small against the socket's buffer). Only when
// that write cannot finish (the collector does not read, or TLS, whose
// writes cannot be attempted without blocking) does a goroutine of the
// connection's own take over, for as long as it has replies to write.
// So an idle or keeping-up connection costs one goroutine, not two.
type pipe struct {
	s    *Server
	conn net.Conn
	r    *protocol.LineReader
	peer Peer
	log  *slog.Logger
	st   *collectorStats
	// raw writes without blocking; nil when the connection cannot (TLS).
	raw syscall.RawConn

	mu sync.Mutex
	// ring[seq%len] is the slot of request seq; head is the oldest not
	// yet taken for writing, tail the next to read.
	ring       []slot
	head, tail uint64
	// ended: the connection no longer writes; tickets are ignored from
	// then on.
	ended bool
	// writing: one goroutine owns the connection's writes (and out); the
	// others only mark slots ready, which the owner takes before it lets
	// go.
	writing bool
	// out holds replies taken from the ring and not yet written; the
	// owner's.
	out []byte
	// deadline: a write deadline may be set on conn (the ACK's, a
	// blocking write's); a non-blocking write clears it first, since the
	// runtime applies it to those too. The owner's.
	deadline bool

	space   chan struct{} // cap 1: slots were freed
	flushed chan struct{} // cap 1: replies were written, or writing let go
	stop    chan struct{} // closed once ended

	// Writer-only state for __COMMIT__ answers (see commitReply).
	durable  int64              // every batch of this session up to it is RECEIVED
	received int64              // highest id answered RECEIVED
	refused  map[int64]struct{} // ids refused and not RECEIVED since
	// seen is the highest batch id read; reader-only.
	seen int64
}

type slotKind uint8

const (
	slotFixed  slotKind = iota // reply known when read
	slotBatch                  // a deferred batch: reply from its Ticket
	slotCommit                 // __COMMIT__: answered when written
)

type slot struct {
	kind  slotKind
	ready bool
	// last asks the writer to stop after this reply (a line too long).
	last  bool
	id    int64
	seen  int64 // slotCommit: the highest batch id read before it
	reply string
}

// maxRefused bounds the ids a session remembers as refused; beyond it
// __COMMIT__ answers stop advancing (PENDING), which is safe.
const maxRefused = 4096

func newPipe(s *Server, conn net.Conn, r *protocol.LineReader, peer Peer) *pipe {
	p := &pipe{
		s: s, conn: conn, r: r, peer: peer,
		log:     s.log.With(slog.String("remote", peer.Remote), slog.String("token_name", peer.Name)),
		ring:    make([]slot, s.cfg.MaxInFlight),
		space:   make(chan struct{}, 1),
		flushed: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		// The ACK was written under a deadline.
		deadline: true,
	}
	if sc, ok := conn.(syscall.Conn); ok && canWriteRaw {
		if raw, err := sc.SyscallConn(); err == nil {
			p.raw = raw
		}
	}
	p.st = s.collectors.open(p)
	return p
}

// Ticket settles the reply of one deferred batch. Done may be called from
// any goroutine; calls after the first, and calls once the connection has
// ended, do nothing.
type Ticket struct {
	p   *pipe
	seq uint64
}

// Done sets the batch's reply: "" means RECEIVED.
func (t Ticket) Done(reply string) {
	p := t.p
	if p == nil {
		return
	}
	if reply == "" {
		reply = protocol.ReplyReceived
	}
	p.mu.Lock()
	if p.ended || t.seq < p.head || t.seq >= p.tail {
		p.mu.Unlock()
		return
	}
	sl := &p.ring[t.seq%uint64(len(p.ring))]
	if sl.ready || sl.kind != slotBatch {
		p.mu.Unlock()
		return
	}
	sl.reply, sl.ready = reply, true
	atHead := t.seq == p.head
	p.mu.Unlock()
	if atHead {
		p.kick()
	}
}

// DoneAll sets reply ("" means RECEIVED) for every ticket, as Done on
// each would, but in one pass: it marks the slots of each run of
// consecutive tickets of one connection under one lock, then writes each
// connection's replies once, after all are marked. A relay settles the
// batches of a commit together, and the tickets of many connections come
// interleaved; a write per batch, or per run, would make several writes
// where one does. It never waits on a peer.
func DoneAll(ts []Ticket, reply string) {
	if reply == "" {
		reply = protocol.ReplyReceived
	}
	// A connection's head is in at most one of its runs (the head does not
	// move until it is written), so each appears here once.
	var kicks []*pipe
	for i := 0; i < len(ts); {
		p := ts[i].p
		j := i
		for j < len(ts) && ts[j].p == p {
			j++
		}
		if p != nil && p.settle(ts[i:j], reply) {
			kicks = append(kicks, p)
		}
		i = j
	}
	for _, p := range kicks {
		p.kick()
	}
}

// settle marks the slots of ts (all of p) ready and reports whether the
// head became ready: the caller then writes (kick).
func (p *pipe) settle(ts []Ticket, reply string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return false
	}
	atHead := false
	for _, t := range ts {
		if t.seq < p.head || t.seq >= p.tail {
			continue
		}
		sl := &p.ring[t.seq%uint64(len(p.ring))]
		if sl.ready || sl.kind != slotBatch {
			continue
		}
		sl.reply, sl.ready = reply, true
		atHead = atHead || t.seq == p.head
	}
	return atHead
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run serves the session until EOF, an error, a timeout or Close, then
// waits for the replies still owed to be written (up to WriteTimeout).
func (p *pipe) run() {
	p.log.Info("edgesocket collector connected")
	reason := p.reader()
	p.drain()
	p.s.collectors.close(p, reason)
	linger.Close(p.conn)
	p.log.Info("edgesocket collector disconnected", slog.String("reason", reason))
}

// reader reads requests until the connection ends; it returns why.
func (p *pipe) reader() string {
	s := p.s
	for {
		// A line already buffered whole is read without a read, so
		// without the deadlines that bound reads (setting them costs
		// more than parsing the line): a pipelining collector's lines
		// come many to a read.
		if !p.r.LineBuffered() {
			if why, ok := p.awaitLine(); !ok {
				return why
			}
			if !p.r.LineBuffered() {
				s.setReadDeadline(p.conn, time.Now().Add(s.cfg.ReadTimeout))
			}
		}
		line, err := p.r.ReadRawLine()
		if err != nil {
			if errors.Is(err, protocol.ErrLineTooLong) {
				s.stats.badRequests.Add(1)
				p.st.setError("request line over the limit of " + strconv.Itoa(s.cfg.MaxLineBytes) + " bytes")
				if seq, ok := p.reserve(); ok {
					p.fill(seq, slot{kind: slotFixed, ready: true, last: true, reply: protocol.ReplyBadRequest})
				}
				s.warnLine.Warn(p.log, "edgesocket request line too long; closing", slog.Any("error", err))
				return "line too long"
			}
			return readEnd(err, "request line not finished within the read timeout")
		}
		seq, ok := p.reserve()
		if !ok {
			return "closed while waiting for replies to be read"
		}
		p.dispatch(seq, line)
		p.r.Shrink(readBufferBytes * 16)
	}
}

// awaitLine waits for the first byte of the next request, under the idle
// timeout; while replies are owed the collector may rightly be silent.
func (p *pipe) awaitLine() (string, bool) {
	s := p.s
	for range 1 << 20 { // bounded: each round waits IdleTimeout
		s.setReadDeadline(p.conn, time.Now().Add(s.cfg.IdleTimeout))
		err := p.r.Fill()
		if err == nil {
			return "", true
		}
		if isTimeout(err) && p.owed() > 0 && !s.isClosing() {
			continue
		}
		return readEnd(err, "idle timeout"), false
	}
	return "idle", false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// readEnd names why a read ended.
func readEnd(err error, timeout string) string {
	switch {
	case isTimeout(err):
		return timeout
	case errors.Is(err, net.ErrClosed):
		return "closed"
	default:
		return "disconnected"
	}
}

// owed is how many replies the session still has to write.
func (p *pipe) owed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.tail - p.head)
}

// reserve takes the next slot, waiting while MaxInFlight replies are
// owed. false once the writer ended or the server closes.
func (p *pipe) reserve() (uint64, bool) {
	for {
		p.mu.Lock()
		if p.ended {
			p.mu.Unlock()
			return 0, false
		}
		if int(p.tail-p.head) < len(p.ring) {
			seq := p.tail
			p.ring[seq%uint64(len(p.ring))] = slot{}
			p.tail++
			p.mu.Unlock()
			return seq, true
		}
		p.mu.Unlock()
		select {
		case <-p.space:
		case <-p.stop:
			return 0, false
		case <-p.s.done:
			return 0, false
		}
	}
}

// fill sets a reserved slot; a ready one at the head is written.
func (p *pipe) fill(seq uint64, sl slot) {
	p.mu.Lock()
	p.ring[seq%uint64(len(p.ring))] = sl
	atHead := seq == p.head
	p.mu.Unlock()
	if sl.ready && atHead {
		p.kick()
	}
}

// dispatch answers one request into slot seq.
func (p *pipe) dispatch(seq uint64, line []byte) {
	s := p.s
	req, err := protocol.ParseRequest(line)
	if err != nil {
		if req.Kind == protocol.KindBatch || bytesHasPrefix(line, protocol.PrefixBatch) {
			s.stats.batches.Add(1)
		}
		s.stats.badRequests.Add(1)
		reply := protocol.ReplyBadRequest
		var re *protocol.RequestError
		if errors.As(err, &re) {
			reply = re.Reply
		}
		// RequestError describes the line without quoting it; the request
		// number says where in the session it was.
		p.st.setError(requestError(seq, err))
		p.fill(seq, slot{kind: slotFixed, ready: true, reply: reply})
		return
	}
	switch req.Kind {
	case protocol.KindBatch:
		p.batch(seq, req.BatchID, req.Payload)
	case protocol.KindCommit:
		p.fill(seq, slot{kind: slotCommit, ready: true, id: req.BatchID, seen: p.seen})
	default:
		s.stats.badRequests.Add(1)
		p.st.setError(requestError(seq, errors.New(protocol.ReplyBadRequest+": __AUTH__ again on an authenticated session")))
		p.fill(seq, slot{kind: slotFixed, ready: true, reply: protocol.ReplyBadRequest})
	}
}

// requestError is the last_error of a refused request: its number in the
// session (from 1) and err, which must not quote the line (ParseRequest's
// do not).
func requestError(seq uint64, err error) string {
	return "request " + strconv.FormatUint(seq+1, 10) + ": " + err.Error()
}

func bytesHasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// batch decodes a batch and hands it to the deferred handler.
func (p *pipe) batch(seq uint64, id int64, payload []byte) {
	s := p.s
	s.stats.batches.Add(1)
	p.seen = max(p.seen, id)
	p.st.batch(len(payload))
	record := payload
	if s.cfg.Decoder != nil {
		var err error
		if record, err = s.cfg.Decoder.Decode(payload); err != nil {
			reply := protocol.ReplyDecodeFailed
			if codec.IsDecryptError(err) {
				s.stats.decryptFailures.Add(1)
				reply = protocol.ReplyDecryptFailed
			} else {
				s.stats.decodeFailures.Add(1)
			}
			p.st.countRefused()
			p.st.setError(requestError(seq, errors.New(reply+": "+err.Error())))
			s.warnDecode.Warn(p.log, "edgesocket batch does not decode", slog.Int64("batch_id", id), slog.Any("error", err))
			p.fill(seq, slot{kind: slotFixed, ready: true, id: id, reply: reply})
			return
		}
	}
	p.fill(seq, slot{kind: slotBatch, id: id})
	s.stats.records.Add(1)
	s.cfg.Handler(p.peer, id, record, Ticket{p: p, seq: seq})
}

// kick writes the ready replies at the head of the ring, unless another
// goroutine already owns the writes (it takes them before it lets go).
// It never blocks: on plain TCP it writes what the socket takes at once
// and leaves the rest to a goroutine of the connection; under TLS that
// goroutine writes everything.
func (p *pipe) kick() {
	p.mu.Lock()
	if p.ended || p.writing {
		p.mu.Unlock()
		return
	}
	p.writing = true
	p.mu.Unlock()
	if p.raw == nil {
		go p.flush(true)
		return
	}
	p.flush(false)
}

// flush writes replies as they are ready, in ring order, until none is;
// the caller owns the writes (writing) and flush lets go of them, or
// hands them to a goroutine of its own when a non-blocking write would
// block. Blocking writes wait up to WriteTimeout: a collector that does
// not read its replies is closed.
func (p *pipe) flush(blocking bool) {
	// Bounded: each round writes at least one reply; past the ring's
	// worth, a goroutine carries on so no caller is held long.
	for range len(p.ring) + 1 {
		p.mu.Lock()
		if p.ended {
			p.writing = false
			p.mu.Unlock()
			return
		}
		var n int
		var last bool
		p.out, n, last = p.writeReady(p.out)
		if len(p.out) == 0 {
			p.writing = false
			p.mu.Unlock()
			notify(p.flushed)
			return
		}
		out := p.out
		p.mu.Unlock()
		if n > 0 {
			notify(p.space)
		}
		var err error
		if blocking {
			_ = p.conn.SetWriteDeadline(time.Now().Add(p.s.cfg.WriteTimeout))
			p.deadline = true
			_, err = p.conn.Write(out)
			out = out[:0]
		} else {
			if p.deadline {
				_ = p.conn.SetWriteDeadline(time.Time{})
				p.deadline = false
			}
			var k int
			k, err = writeNow(p.raw, out)
			if err == nil && k < len(out) {
				p.out = out[:copy(out, out[k:])]
				go p.flush(true)
				return
			}
			out = out[:0]
		}
		p.out = out
		if err != nil {
			p.fail("writing replies: " + err.Error())
			return
		}
		notify(p.flushed)
		if last {
			p.end()
			return
		}
	}
	go p.flush(true)
}

// fail ends the connection after a write error (which ends the reader
// too).
func (p *pipe) fail(msg string) {
	p.st.setError(msg)
	_ = p.conn.Close()
	p.end()
}

// end stops all writing: tickets are ignored from now on.
func (p *pipe) end() {
	p.mu.Lock()
	p.writing = false
	if !p.ended {
		p.ended = true
		close(p.stop)
	}
	p.mu.Unlock()
	notify(p.flushed)
}

// drain runs once the reader ended: it waits for the replies still owed
// to be written, up to WriteTimeout, or until Close, then ends the
// connection's writing.
func (p *pipe) drain() {
	t := time.NewTimer(p.s.cfg.WriteTimeout)
	defer t.Stop()
	defer p.end()
	for {
		p.mu.Lock()
		n, busy, ended := p.tail-p.head, p.writing, p.ended
		p.mu.Unlock()
		if ended || n == 0 && !busy {
			return
		}
		select {
		case <-p.flushed:
		case <-p.stop:
			return
		case <-t.C:
			if n := p.owed(); n > 0 {
				p.s.warnOwed.Warn(p.log, "edgesocket collector left with replies owed; it resends those batches", slog.Int("owed", n))
			}
			return
		case <-p.s.done:
			// Close: what is ready is being written; do not wait for
			// the rest.
			return
		}
	}
}

// writeReady appends the ready replies at the head of the ring to out,
// taking their slots, and reports how many, and whether the last one asks
// to stop. p.mu is held; it does no I/O.
func (p *pipe) writeReady(out []byte) ([]byte, int, bool) {
	n := 0
	for p.head < p.tail {
		sl := &p.ring[p.head%uint64(len(p.ring))]
		if !sl.ready {
			break
		}
		reply := sl.reply
		switch sl.kind {
		case slotBatch:
			p.settled(sl.id, reply)
		case slotCommit:
			reply = p.commitReply(sl.id, sl.seen)
		}
		out = append(out, reply...)
		out = append(out, '\n')
		last := sl.last
		*sl = slot{}
		p.head++
		n++
		if last {
			return out, n, true
		}
	}
	return out, n, false
}

// settled records a batch reply for the __COMMIT__ answers and the
// collector's counters.
func (p *pipe) settled(id int64, reply string) {
	if reply != protocol.ReplyReceived {
		p.st.refused(reply)
		if len(p.refused) < maxRefused {
			if p.refused == nil {
				p.refused = make(map[int64]struct{})
			}
			p.refused[id] = struct{}{}
		} else {
			p.refused[0] = struct{}{} // blocks the watermark for good
		}
		return
	}
	p.st.received1()
	delete(p.refused, id)
	p.received = max(p.received, id)
	if len(p.refused) == 0 {
		p.durable = p.received
		return
	}
	low := int64(-1)
	for r := range p.refused {
		if low < 0 || r < low {
			low = r
		}
	}
	if id < low {
		p.durable = max(p.durable, id)
	}
}

// commitReply answers __COMMIT__:id from this session's own knowledge.
// The Handler answers RECEIVED only once the batch is durable, so every
// batch of this session with an id up to durable is durable; ids below
// this session's first were answered RECEIVED before, or are resent first
// on it, as every collector resends unanswered batches before new ones.
// So:
//   - id <= durable: ACK:<durable>;
//   - id above every batch read before the __COMMIT__: RETRY (never
//     seen: send it);
//   - otherwise PENDING: refused and not resent yet, or behind one that
//     is.
func (p *pipe) commitReply(id, seen int64) string {
	switch {
	case id <= p.durable:
		return protocol.ReplyACK + ":" + strconv.FormatInt(p.durable, 10)
	case id > seen:
		return protocol.ReplyRetry
	default:
		return protocol.ReplyPending
	}
}
