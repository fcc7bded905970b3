package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// pump runs the pipelined exchange on s until every ready batch has a
// final outcome (nil) or the session fails (error; the batches it still
// owed replies for, and those held since the last balanced barrier, are
// back in ready). progress reports whether any batch reached a final
// outcome.
//
// Replies carry no batch id, so two checks attribute them. A reply
// settles the oldest request in flight only if that request's line was
// handed to the socket before the reply began to be read: the engine
// cannot answer what it has not received. And every commitEvery batch
// lines, and after the last one, a "__COMMIT__" goes out as a barrier:
// its reply is never one a batch gets, and a batch never gets the reply
// of a commit, so a surplus, missing or reordered reply shows up at the
// latest at the next barrier, as a reply of the wrong kind. The outcomes
// of the batches answered since the last barrier are held until a
// barrier balances; on any violation they go back to ready with the
// batches still in flight, and the session ends with
// transport.ErrProtocol: a duplicate, never a loss.
func (c *Client) pump(ctx context.Context, s *session, k *call) (progress bool, err error) {
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	p := &pumpRun{c: c, ctx: ctx, s: s, k: k, inflight: make([]flight, 0, min(s.win.size, len(k.ready))+1)}
	k.sinceBarrier = 0 // a barrier balances what its own session answered
	defer func() { p.end(err) }()
	for {
		paused := p.paused()
		if !paused {
			if err := p.fill(); err != nil {
				return p.progress, err
			}
		}
		if len(p.inflight) == 0 {
			done, err := p.idle()
			if done || err != nil {
				return p.progress, err
			}
			continue
		}
		if err := p.flushBeforeRead(); err != nil {
			return p.progress, err
		}
		if k.feed != nil {
			woke, err := p.await()
			if err != nil {
				return p.progress, err
			}
			if woke {
				continue // the feed may have more to send
			}
		}
		// The window is the limit when lines wait for room in it; not
		// during a RETRY/QUEUE_FULL pause, which holds them back anyway.
		limited := !paused && p.batches() >= s.win.size && len(k.ready) > 0
		f, reply, err := p.next()
		if err != nil {
			return p.progress, err
		}
		if f.i == barrier {
			err = p.onBarrier(reply)
		} else {
			err = p.onBatch(f, reply, limited)
		}
		if err != nil {
			return p.progress, err
		}
	}
}

// pumpRun is the state of one pump: the requests in flight on the
// session, oldest first, the RETRY/QUEUE_FULL pause and the deadline.
type pumpRun struct {
	c   *Client
	ctx context.Context
	s   *session
	k   *call

	inflight []flight
	barriers int // barriers in flight: the window counts batch lines only

	pauseUntil, deadlineSet time.Time
	progress                bool
	// wrote: a batch line was written since the last reply was read.
	wrote bool
}

// batches counts the batch lines in flight.
func (p *pumpRun) batches() int { return len(p.inflight) - p.barriers }

func (p *pumpRun) paused() bool { return !p.pauseUntil.IsZero() && time.Now().Before(p.pauseUntil) }

// end puts back in ready what the pump leaves: the batches in flight and,
// when it failed, those held since the last balanced barrier.
func (p *pumpRun) end(err error) {
	c, k := p.c, p.k
	defer p.publish()
	// Only a connection failure says something about the batches on it
	// (the engine may have choked on one). A protocol violation says
	// nothing about them, nor does the caller stopping: the agent
	// shutting down must not cost a row an attempt, so those batches end
	// NotSent if the call gives up.
	lost := err != nil && !errors.Is(err, transport.ErrProtocol) && c.stopped(p.ctx) == nil
	for _, f := range p.inflight {
		if f.i == barrier {
			continue
		}
		if lost && p.s.onWire(f.end) {
			k.lost[f.i] = true
		}
		k.requeue(f.i)
	}
	if err == nil {
		return
	}
	n := k.revertHeld()
	if n > 0 && errors.Is(err, transport.ErrProtocol) {
		c.stats.reverted.Add(uint64(n))
	}
	if n > 0 || k.sinceBarrier > 0 {
		c.barrierUnbalanced()
	}
}

// publish tells Stats what the session's window has learnt of the link.
func (p *pumpRun) publish() {
	p.c.stats.window.Store(int64(p.s.win.size))
	p.c.stats.linkBound.Store(int64(p.s.win.bound()))
	p.c.stats.roundTrip.Store(int64(p.s.win.minRTT))
}

// fresh is called before every read or write that may block (a write
// blocks when the engine stops reading): the deadline bounding it is then
// at least 15/16 of ReadTimeout away. Refreshing it costs timer work, so
// it happens only once it has aged a little; and reading the clock is
// slow on some VMs, so replies already buffered and lines that only fill
// the write buffer do not read it at all.
func (p *pumpRun) fresh() error {
	now := time.Now()
	if now.Sub(p.deadlineSet) > p.c.cfg.ReadTimeout/readDeadlineSlack {
		_ = p.s.conn.SetDeadline(now.Add(p.c.cfg.ReadTimeout))
		p.deadlineSet = now
		// ctx's AfterFunc may have set a past deadline just before: do
		// not let the refresh undo it.
		if err := p.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// write hands s.line to the buffer; callers name the line in an error
// only when there is one, off the per-line path.
func (p *pumpRun) write() error {
	if len(p.s.line) > p.s.w.Available() { // this write reaches the socket
		if err := p.fresh(); err != nil {
			return err
		}
	}
	_, err := p.s.w.Write(p.s.line)
	return err
}

// fill writes lines while the window has room; a barrier closes every
// commitEvery batches, and the last batches of the call, so that the
// call ends on a balance. Writing one never waits for a reply: the window
// keeps filling after it.
func (p *pumpRun) fill() error {
	c, s, k := p.c, p.s, p.k
	if len(k.ready) == 0 {
		k.pull(&c.stats) // a Stream's next segment, once the last is written
	}
	for {
		for p.batches() < c.limit(s) && len(k.ready) > 0 && !c.draining(s, k) && !k.stopped {
			if s.pace.rate > 0 {
				now := time.Now()
				if wait := s.pace.take(now); wait > 0 {
					p.pauseUntil = now.Add(wait)
					break
				}
			}
			i := k.ready[0]
			s.line = protocol.AppendCheckedBatch(s.line[:0], k.batches[i].ID, k.batches[i].Payload)
			k.ready = k.ready[1:]
			p.inflight = append(p.inflight, flight{i: i, end: s.handed() + int64(len(s.line))})
			if err := p.write(); err != nil {
				return fmt.Errorf("write batch %d: %w", k.batches[i].ID, err)
			}
			s.lastWritten = k.batches[i].ID
			k.sinceBarrier++
			p.wrote = true
			c.stats.sent.Add(1)
			if k.sinceBarrier >= c.commitEvery(s) && !s.noCommit {
				break
			}
		}
		if k.sinceBarrier == 0 || s.noCommit || (k.sinceBarrier < c.commitEvery(s) && len(k.ready) > 0 && !k.stopped) {
			break
		}
		id := s.barrierID(c.Watermark())
		s.line, _ = protocol.AppendCommit(s.line[:0], id)
		p.inflight = append(p.inflight, flight{i: barrier, end: s.handed() + int64(len(s.line))})
		if err := p.write(); err != nil {
			return fmt.Errorf("write commit barrier %d: %w", id, err)
		}
		k.sinceBarrier = 0
		p.barriers++
		c.stats.barriers.Add(1)
	}
	c.stats.notePeak(p.batches())
	return nil
}

// idle runs when nothing is in flight: done when the call is, else it
// closes a drained window (a receiver without __COMMIT__) or waits out a
// RETRY/QUEUE_FULL pause.
func (p *pumpRun) idle() (done bool, err error) {
	s, k := p.s, p.k
	if s.noCommit && k.sinceBarrier > 0 {
		// A receiver without __COMMIT__: a drained window is the
		// barrier (see Client.draining).
		k.sinceBarrier = 0
		p.settle()
		return false, nil
	}
	if len(k.ready) == 0 {
		k.pull(&p.c.stats)
	}
	if len(k.ready) == 0 || (k.stopped && k.sinceBarrier == 0) {
		// A stopped call still writes the barrier that balances what
		// it wrote, once the pause allows.
		return true, nil
	}
	if err := backoff.Sleep(p.ctx, time.Until(p.pauseUntil)); err != nil {
		return false, err
	}
	// The protocol has no heartbeat and the wait may have been long: do
	// not write onto a connection the engine closed, or one it has put
	// out of step, meanwhile.
	if err := s.check(); err != nil {
		return false, fmt.Errorf("session after a RETRY/QUEUE_FULL wait: %w", err)
	}
	p.deadlineSet = time.Time{} // check may have cleared the deadline
	return false, nil
}

// flushBeforeRead flushes only before a read that may block: while whole
// replies are already buffered, new lines pile up and leave in one write.
func (p *pumpRun) flushBeforeRead() error {
	if p.s.r.LineBuffered() {
		return nil
	}
	if err := p.fresh(); err != nil {
		return err
	}
	if p.s.w.Buffered() > 0 {
		if err := p.s.w.Flush(); err != nil {
			return fmt.Errorf("write batches: %w", err)
		}
	}
	p.timeRound()
	return nil
}

// timeRound starts timing a round trip, if none is being timed, at the
// newest batch line in flight when it was written since the last read:
// the pump is about to wait for replies, so every line before it is on
// the wire, and the replies that come back until its own are what the
// link carried in one round trip.
func (p *pumpRun) timeRound() {
	if p.s.win.probing() || !p.wrote {
		return // a line written before the last read was not timed then
	}
	p.wrote = false
	for i := len(p.inflight) - 1; i >= 0; i-- {
		if f := p.inflight[i]; f.i != barrier {
			p.s.win.sent(f.end, time.Now())
			return
		}
	}
}

// next reads the reply to the oldest request in flight, and takes that
// request off: only if its line was handed to the socket before the
// reply began to be read (the engine cannot answer what it has not
// received).
func (p *pumpRun) next() (flight, protocol.Reply, error) {
	s, k := p.s, p.k
	from := s.consumed()
	line, err := s.r.ReadLine()
	if err != nil {
		return flight{}, protocol.Reply{}, fmt.Errorf("read reply for %s: %w", k.name(p.inflight[0]), eofError(err))
	}
	f := p.inflight[0]
	reply := protocol.ParseReply(line)
	if s.in.sentWhenRead(from) < f.end {
		return flight{}, reply, fmt.Errorf("%w: reply %q began to arrive before %s, the oldest unanswered request, was sent: "+
			"it answers nothing (an unsolicited or a surplus reply)", transport.ErrProtocol, reply.Line, k.name(f))
	}
	p.inflight = p.inflight[1:]
	if f.i == barrier {
		p.barriers--
	}
	// A line written before this reply was read may have waited on the
	// wire while the pump waited: it times no round trip (timeRound).
	p.wrote = false
	return f, reply, nil
}

// onBarrier takes a barrier's reply: a balance makes the held outcomes
// final.
func (p *pumpRun) onBarrier(reply protocol.Reply) error {
	if err := p.c.barrierReply(p.s, reply); err != nil {
		return err
	}
	if len(p.k.held) > 0 {
		p.progress = true
	}
	p.settle()
	p.c.barrierBalanced()
	return nil
}

// onBatch takes a batch's reply; limited says the window was full while
// more lines waited.
func (p *pumpRun) onBatch(f flight, reply protocol.Reply, limited bool) error {
	c, s, k := p.c, p.s, p.k
	i, end := f.i, f.end
	id := k.batches[i].ID
	if commitOnly(reply.Code) {
		k.requeue(i)
		return fmt.Errorf("%w: batch %d answered %q, a reply only a __COMMIT__ gets: the replies are out of step",
			transport.ErrProtocol, id, reply.Line)
	}
	switch reply.Code {
	case protocol.CodeReceived:
		k.finish(i, transport.Received, nil)
		k.held = append(k.held, i)
		c.stats.received.Add(1)
		var now time.Time
		if s.win.timed(end) {
			now = time.Now()
		}
		s.win.received(limited, end, now)
		s.pace.received()
		s.noteReceived(id)
	case protocol.CodeRetry:
		c.stats.retries.Add(1)
		k.retries[i]++
		if k.retries[i] >= c.cfg.MaxBatchSendAttempts {
			k.finish(i, transport.Failed, fmt.Errorf("batch %d: exceeded max batch send attempts (%d) without RECEIVED (engine kept replying RETRY)", id, c.cfg.MaxBatchSendAttempts))
			k.held = append(k.held, i)
			c.stats.bad.Add(1)
			p.firstFailed()
			return nil
		}
		k.requeue(i)
		s.win.queueFull(end, s.handed()) // the engine's queue took no more: as QUEUE_FULL
		p.pauseUntil = later(p.pauseUntil, time.Now().Add(c.backoff.Jittered(k.retries[i]-1)))
		c.log.Debug("edgesocket RETRY", slog.Int64("batch_id", id), slog.Int("retries", k.retries[i]))
	case protocol.CodeQueueFull:
		c.stats.queueFull.Add(1)
		k.requeue(i)
		// The engine may ask for up to 10 minutes; a connection can die
		// unnoticed in that time. Wait at most ReadTimeout, look at the
		// connection, resend: a still-full engine says so. While it is
		// draining, the pacer waits much less and then sends at its pace.
		now := time.Now()
		wait := min(reply.Delay, c.cfg.ReadTimeout)
		if s.win.queueFull(end, s.handed()) {
			wait = s.pace.queueFull(now, wait)
		} else {
			wait = s.pace.pause(wait)
		}
		p.pauseUntil = later(p.pauseUntil, now.Add(wait))
		c.log.Debug("edgesocket QUEUE_FULL", slog.Int64("batch_id", id), slog.Duration("asked", reply.Delay), slog.Duration("wait", wait))
	case protocol.CodeDecryptFailed:
		k.finish(i, transport.Failed, fmt.Errorf("batch %d: %w", id, transport.ErrDecryptFailed))
		c.stats.bad.Add(1)
		p.progress = true
		return fmt.Errorf("batch %d: %w", id, transport.ErrDecryptFailed)
	default:
		k.finish(i, transport.Failed, fmt.Errorf("batch %d: unexpected batch reply %q", id, reply.Line))
		k.held = append(k.held, i)
		c.stats.bad.Add(1)
		p.firstFailed()
	}
	return nil
}

// firstFailed stops the call when, with checkpoint delivery, a batch
// failed before any was RECEIVED on the session: a job started afresh
// takes the first id it receives as its floor and ACKs every lower one
// without a checkpoint, so no later batch may reach it first.
func (p *pumpRun) firstFailed() {
	if p.c.cfg.Checkpoint && !p.s.primed {
		p.k.stopped = true
	}
}
