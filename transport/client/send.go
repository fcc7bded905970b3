package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// call is the state of one Send call.
type call struct {
	batches []transport.Batch
	results []transport.Result
	// ready holds indexes of batches waiting to be written, ascending, so
	// a resend goes out before batches that came after it.
	ready []int
	// retries counts RETRY replies per batch index.
	retries []int
	// lost marks batches whose line reached the socket of a connection
	// that then failed (cut, EOF, silence) before answering: if the call
	// gives up they are Failed, since the engine may have choked on them.
	lost []bool
	// held are the batches answered since the last commit barrier was
	// answered: their outcomes stand only once a barrier balances (see
	// pump), and go back to ready if it does not.
	held []int
	// sinceBarrier counts batch lines written since the last barrier line.
	sinceBarrier int
}

// settleHeld makes the held outcomes final: a barrier balanced.
func (k *call) settleHeld() { k.held = k.held[:0] }

// revertHeld puts every held batch back in ready with no outcome: the
// replies that gave them one cannot be attributed.
func (k *call) revertHeld() int {
	n := len(k.held)
	for _, i := range k.held {
		k.finish(i, transport.NotSent, nil)
		k.requeue(i)
	}
	k.held = k.held[:0]
	return n
}

// flight is a request awaiting its reply: a batch, or a commit barrier.
type flight struct {
	i   int   // index in call.batches; barrier for a commit barrier
	end int64 // session stream offset just past its line
}

// barrier marks a flight that is a commit barrier, not a batch.
const barrier = -1

func (k *call) requeue(i int) {
	at, _ := slices.BinarySearch(k.ready, i)
	k.ready = slices.Insert(k.ready, at, i)
}

func (k *call) finish(i int, o transport.Outcome, err error) {
	k.results[i].Outcome = o
	k.results[i].Err = err
}

// newCall checks every batch once (pump writes it, and any resend of
// it, without scanning the payload again) and readies the good ones.
func newCall(batches []transport.Batch, stats *counters) *call {
	k := &call{
		batches: batches,
		results: make([]transport.Result, len(batches)),
		ready:   make([]int, 0, len(batches)),
		retries: make([]int, len(batches)),
		lost:    make([]bool, len(batches)),
	}
	for i, b := range batches {
		k.results[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent}
		if err := protocol.CheckBatch(b.ID, b.Payload); err != nil {
			k.finish(i, transport.Failed, err)
			stats.bad.Add(1)
			continue
		}
		k.ready = append(k.ready, i)
	}
	return k
}

// Send delivers batches and returns one Result per batch, in order. See
// the package documentation for how each reply and failure is handled.
// A non-nil error means the call stopped early; it wraps one of
// transport.ErrAuthFailed, ErrDecryptFailed, ErrRejected, ErrUnavailable,
// ErrClosed, or ctx's error.
func (c *Client) Send(ctx context.Context, batches []transport.Batch) ([]transport.Result, error) {
	k := newCall(batches, &c.stats)
	if c.life.Err() != nil {
		return c.giveUp(k, transport.ErrClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()

	var r reconnects
	for len(k.ready) > 0 {
		if err := c.ensureSession(ctx, &r); err != nil {
			return c.giveUp(k, err)
		}
		if c.cfg.Checkpoint && !c.sess.settled {
			// Nothing may go out before the ids held as received are
			// asked about (transport.Committer): the caller settles.
			return c.giveUp(k, transport.ErrUnsettled)
		}
		progress, err := c.pump(ctx, c.sess, k)
		if progress {
			r.streak = 0
		}
		if err == nil {
			continue // ready is empty
		}
		if stopErr := c.afterPump(ctx, err, len(k.ready)); stopErr != nil {
			return c.giveUp(k, stopErr)
		}
		r.lastErr = err
	}
	return k.results, nil
}

// reconnects counts connect attempts since the last final outcome.
type reconnects struct {
	streak  int
	lastErr error
}

// ensureSession returns with c.sess open and checked, connecting with
// backoff as needed, or with the error that must end the call: the caller
// stopped, the engine refused us, or r's attempts ran out.
func (c *Client) ensureSession(ctx context.Context, r *reconnects) error {
	for {
		if err := c.stopped(ctx); err != nil {
			c.dropSession()
			return err
		}
		if c.sess != nil {
			err := c.sess.check()
			if err == nil {
				return nil
			}
			if errors.Is(err, transport.ErrProtocol) {
				c.stats.violations.Add(1)
				c.log.Error(brokeProtocol, slog.String("when", "idle between calls"), slog.Any("error", err))
			} else {
				c.log.Info("edgesocket session found closed while idle; reconnecting", slog.Any("error", err))
			}
			c.dropSession()
		}
		if r.streak >= c.cfg.MaxReconnectCycles {
			return fmt.Errorf("%w: %s: %d connect attempts failed, last error: %w",
				transport.ErrUnavailable, c.cfg.Endpoint, r.streak, r.lastErr)
		}
		if r.streak > 0 {
			if err := backoff.Sleep(ctx, c.backoff.Jittered(r.streak-1)); err != nil {
				return c.stopped(ctx)
			}
		}
		r.streak++
		s, err := c.connect(ctx)
		if err != nil {
			if stopErr := c.stopped(ctx); stopErr != nil {
				return stopErr
			}
			if errors.Is(err, transport.ErrAuthFailed) || errors.Is(err, transport.ErrRejected) {
				c.log.Error("edgesocket session refused", slog.Any("error", err))
				return err
			}
			if errors.Is(err, transport.ErrProtocol) {
				c.stats.violations.Add(1)
				c.log.Error(brokeProtocol, slog.String("when", "authenticating"), slog.Int("attempt", r.streak), slog.Any("error", err))
			} else {
				c.log.Warn("edgesocket connect failed", slog.Int("attempt", r.streak), slog.Any("error", err))
			}
			r.lastErr = err
			continue
		}
		c.setSession(s)
		c.log.Info("edgesocket session authenticated", slog.Int("attempt", r.streak))
		return nil
	}
}

// afterPump drops the session pump failed on and says whether the call
// must end (non-nil) or may go on with a new session.
func (c *Client) afterPump(ctx context.Context, err error, unsettled int) error {
	c.dropSession()
	if stopErr := c.stopped(ctx); stopErr != nil {
		return stopErr
	}
	if errors.Is(err, transport.ErrDecryptFailed) {
		c.log.Error("edgesocket engine cannot decrypt", slog.Any("error", err))
		return err
	}
	if errors.Is(err, transport.ErrProtocol) {
		c.stats.violations.Add(1)
		c.log.Error(brokeProtocol, slog.String("when", "reading replies"), slog.Int("unsettled", unsettled), slog.Any("error", err))
	} else {
		c.log.Warn("edgesocket session lost; reconnecting", slog.Int("unanswered", unsettled), slog.Any("error", err))
	}
	return nil
}

// brokeProtocol is logged at ERROR whenever a session is dropped because
// the engine broke the reply protocol: that is an engine fault an operator
// must hear about, not a network blip.
const brokeProtocol = "edgesocket engine broke the reply protocol (a reply no request on the wire could answer, or bytes sent unasked); " +
	"dropping the session, acking nothing more from it, resending what it left unanswered"

// stopped returns the reason to stop if Close ran or ctx is done.
func (c *Client) stopped(ctx context.Context) error {
	if c.life.Err() != nil {
		return transport.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send to %s: %w", c.cfg.Endpoint, err)
	}
	return nil
}

// giveUp settles every batch still waiting: Failed if it was lost on a
// failed connection, NotSent otherwise (never sent, or left unanswered
// only because the caller stopped or the engine broke the protocol).
// reason is returned as the call error.
func (c *Client) giveUp(k *call, reason error) ([]transport.Result, error) {
	for _, i := range k.ready {
		if k.lost[i] {
			k.finish(i, transport.Failed, fmt.Errorf("batch %d: written but never answered: %w", k.batches[i].ID, reason))
			c.stats.bad.Add(1)
		} else {
			k.finish(i, transport.NotSent, reason)
		}
	}
	k.ready = k.ready[:0]
	return k.results, reason
}

// readDeadlineSlack: deadlines are refreshed only once they have aged by
// this fraction of ReadTimeout, to keep timer work off the path of every
// reply. A silent engine is thus detected after 15/16 of ReadTimeout at
// the earliest.
const readDeadlineSlack = 16

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

	inflight := make([]flight, 0, min(s.win.size, len(k.ready))+1)
	k.sinceBarrier = 0 // a barrier balances what its own session answered
	defer func() {
		// Only a connection failure says something about the batches
		// on it (the engine may have choked on one). A protocol
		// violation says nothing about them, nor does the caller
		// stopping: the agent shutting down must not cost a row an
		// attempt, so those batches end NotSent if the call gives up.
		lost := err != nil && !errors.Is(err, transport.ErrProtocol) && c.stopped(ctx) == nil
		for _, f := range inflight {
			if f.i == barrier {
				continue
			}
			if lost && s.onWire(f.end) {
				k.lost[f.i] = true
			}
			k.requeue(f.i)
		}
		if err != nil {
			n := k.revertHeld()
			if n > 0 && errors.Is(err, transport.ErrProtocol) {
				c.stats.reverted.Add(uint64(n))
			}
			if n > 0 || k.sinceBarrier > 0 {
				c.barrierUnbalanced()
			}
		}
	}()
	var pauseUntil, deadlineSet time.Time
	barriers := 0 // barriers in flight: the window counts batch lines only
	defer func() { c.stats.window.Store(int64(s.win.size)) }()
	// fresh is called before every read or write that may block (a write
	// blocks when the engine stops reading): the deadline bounding it is
	// then at least 15/16 of ReadTimeout away. Refreshing it costs timer
	// work, so it happens only once it has aged a little; and reading the
	// clock is slow on some VMs, so replies already buffered and lines that
	// only fill the write buffer do not read it at all.
	fresh := func() error {
		now := time.Now()
		if now.Sub(deadlineSet) > c.cfg.ReadTimeout/readDeadlineSlack {
			_ = s.conn.SetDeadline(now.Add(c.cfg.ReadTimeout))
			deadlineSet = now
			// ctx's AfterFunc may have set a past deadline just before:
			// do not let the refresh undo it.
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	// write hands s.line to the buffer; callers name the line in an error
	// (formatting it for every line cost a sixth of the throughput).
	write := func() error {
		if len(s.line) > s.w.Available() { // this write reaches the socket
			if err := fresh(); err != nil {
				return err
			}
		}
		_, err := s.w.Write(s.line)
		return err
	}
	for {
		paused := !pauseUntil.IsZero() && time.Now().Before(pauseUntil)
		if !paused {
			// Lines go out while the window has room; a barrier closes
			// every commitEvery batches, and the last batches of the
			// call, so that the call ends on a balance. Writing one
			// never waits for a reply: the window keeps filling after it.
			for {
				for len(inflight)-barriers < c.limit(s) && len(k.ready) > 0 && !c.draining(s, k) {
					i := k.ready[0]
					s.line = protocol.AppendCheckedBatch(s.line[:0], k.batches[i].ID, k.batches[i].Payload)
					k.ready = k.ready[1:]
					inflight = append(inflight, flight{i: i, end: s.handed() + int64(len(s.line))})
					if err := write(); err != nil {
						return progress, fmt.Errorf("write batch %d: %w", k.batches[i].ID, err)
					}
					s.lastWritten = k.batches[i].ID
					k.sinceBarrier++
					c.stats.sent.Add(1)
					if k.sinceBarrier >= c.commitEvery(s) && !s.noCommit {
						break
					}
				}
				if k.sinceBarrier == 0 || s.noCommit || (k.sinceBarrier < c.commitEvery(s) && len(k.ready) > 0) {
					break
				}
				id := s.barrierID()
				s.line, _ = protocol.AppendCommit(s.line[:0], id)
				inflight = append(inflight, flight{i: barrier, end: s.handed() + int64(len(s.line))})
				if err := write(); err != nil {
					return progress, fmt.Errorf("write commit barrier %d: %w", id, err)
				}
				k.sinceBarrier = 0
				barriers++
				c.stats.barriers.Add(1)
			}
			c.stats.notePeak(len(inflight) - barriers)
		}
		if len(inflight) == 0 {
			if s.noCommit && k.sinceBarrier > 0 {
				// A receiver without __COMMIT__: a drained window is
				// the barrier (see session.draining).
				k.sinceBarrier = 0
				k.settleHeld()
				continue
			}
			if len(k.ready) == 0 {
				return progress, nil
			}
			// Paused by RETRY or QUEUE_FULL with nothing owed: wait.
			if err := backoff.Sleep(ctx, time.Until(pauseUntil)); err != nil {
				return progress, err
			}
			// The protocol has no heartbeat and the wait may have been
			// long: do not write onto a connection the engine closed,
			// or one it has put out of step, meanwhile.
			if err := s.check(); err != nil {
				return progress, fmt.Errorf("session after a RETRY/QUEUE_FULL wait: %w", err)
			}
			deadlineSet = time.Time{} // check may have cleared the deadline
			continue
		}
		// Flush only before a read that may block: while whole replies
		// are already buffered, new lines pile up and leave in one write.
		if !s.r.LineBuffered() {
			if err := fresh(); err != nil {
				return progress, err
			}
			if s.w.Buffered() > 0 {
				if err := s.w.Flush(); err != nil {
					return progress, fmt.Errorf("write batches: %w", err)
				}
			}
		}
		// The window is the limit when lines wait for room in it; not
		// during a RETRY/QUEUE_FULL pause, which holds them back anyway.
		limited := !paused && len(inflight)-barriers >= s.win.size && len(k.ready) > 0
		from := s.consumed()
		line, err := s.r.ReadLine()
		if err != nil {
			return progress, fmt.Errorf("read reply for %s: %w", k.name(inflight[0]), eofError(err))
		}
		f := inflight[0]
		reply := protocol.ParseReply(line)
		if s.in.sentWhenRead(from) < f.end {
			return progress, fmt.Errorf("%w: reply %q began to arrive before %s, the oldest unanswered request, was sent: "+
				"it answers nothing (an unsolicited or a surplus reply)", transport.ErrProtocol, reply.Line, k.name(f))
		}
		inflight = inflight[1:]
		if f.i == barrier {
			barriers--
			if err := c.barrierReply(s, reply); err != nil {
				return progress, err
			}
			if len(k.held) > 0 {
				progress = true
			}
			k.settleHeld()
			c.barrierBalanced()
			continue
		}
		i, end := f.i, f.end
		id := k.batches[i].ID
		if commitOnly(reply.Code) {
			k.requeue(i)
			return progress, fmt.Errorf("%w: batch %d answered %q, a reply only a __COMMIT__ gets: the replies are out of step",
				transport.ErrProtocol, id, reply.Line)
		}
		switch reply.Code {
		case protocol.CodeReceived:
			k.finish(i, transport.Received, nil)
			k.held = append(k.held, i)
			c.stats.received.Add(1)
			s.win.received(limited)
			s.noteReceived(id)
		case protocol.CodeRetry:
			c.stats.retries.Add(1)
			k.retries[i]++
			if k.retries[i] >= c.cfg.MaxBatchSendAttempts {
				k.finish(i, transport.Failed, fmt.Errorf("batch %d: exceeded max batch send attempts (%d) without RECEIVED (engine kept replying RETRY)", id, c.cfg.MaxBatchSendAttempts))
				k.held = append(k.held, i)
				c.stats.bad.Add(1)
				continue
			}
			k.requeue(i)
			s.win.queueFull(end, s.handed()) // the engine's queue took no more: as QUEUE_FULL
			pauseUntil = later(pauseUntil, time.Now().Add(c.backoff.Jittered(k.retries[i]-1)))
			c.log.Debug("edgesocket RETRY", slog.Int64("batch_id", id), slog.Int("retries", k.retries[i]))
		case protocol.CodeQueueFull:
			c.stats.queueFull.Add(1)
			k.requeue(i)
			s.win.queueFull(end, s.handed())
			// The engine may ask for up to 10 minutes; a connection can
			// die unnoticed in that time. Wait at most ReadTimeout, look
			// at the connection, resend: a still-full engine says so.
			wait := min(reply.Delay, c.cfg.ReadTimeout)
			pauseUntil = later(pauseUntil, time.Now().Add(wait))
			c.log.Debug("edgesocket QUEUE_FULL", slog.Int64("batch_id", id), slog.Duration("asked", reply.Delay), slog.Duration("wait", wait))
		case protocol.CodeDecryptFailed:
			k.finish(i, transport.Failed, fmt.Errorf("batch %d: %w", id, transport.ErrDecryptFailed))
			c.stats.bad.Add(1)
			return true, fmt.Errorf("batch %d: %w", id, transport.ErrDecryptFailed)
		default:
			k.finish(i, transport.Failed, fmt.Errorf("batch %d: unexpected batch reply %q", id, reply.Line))
			k.held = append(k.held, i)
			c.stats.bad.Add(1)
		}
	}
}

// draining reports that s has a receiver without __COMMIT__ and CommitEvery
// batches went out since the window last drained: no more go out until
// every reply is in, which is then the barrier.
func (c *Client) draining(s *session, k *call) bool {
	return s.noCommit && k.sinceBarrier >= c.commitEvery(s)
}

// commitEvery is how many batch lines go out between barriers now (see
// Client.barrierEvery).
func (c *Client) commitEvery(*session) int { return c.barrierEvery }

// barrierBalanced lets the barrier interval grow back toward CommitEvery.
func (c *Client) barrierBalanced() {
	c.barrierEvery = min(c.cfg.CommitEvery, c.barrierEvery*2)
}

// barrierUnbalanced halves the barrier interval after a session ended
// with outcomes held: a link that drops sessions every few dozen lines
// then still balances between the drops, instead of resending the same
// held outcomes forever.
func (c *Client) barrierUnbalanced() {
	c.barrierEvery = max(1, c.barrierEvery/2)
}

// name names a request in flight for errors.
func (k *call) name(f flight) string {
	if f.i == barrier {
		return "a commit barrier"
	}
	return fmt.Sprintf("batch %d", k.batches[f.i].ID)
}

// limit is how many requests may await replies on s now. With checkpoint
// delivery the first batch of a session goes alone until it is RECEIVED:
// a job started afresh takes its first id N as committed up to N-1 (the
// engine's floor), so a lower id received after it would count as
// committed before any checkpoint covered it.
func (c *Client) limit(s *session) int {
	if c.cfg.Checkpoint && !s.primed {
		return 1
	}
	return s.win.size
}

// commitOnly reports replies the engine gives a __COMMIT__ and never a
// __BATCH__.
func commitOnly(code protocol.Code) bool {
	return code == protocol.CodeACK || code == protocol.CodePending || code == protocol.CodeResend
}

// batchOnly reports replies the engine gives a __BATCH__ and never a
// __COMMIT__, and lines no engine sends.
func batchOnly(code protocol.Code) bool {
	switch code {
	case protocol.CodeReceived, protocol.CodeQueueFull, protocol.CodeDecodeFailed, protocol.CodeDecryptFailed,
		protocol.CodeAuthFailed, protocol.CodeRejected, protocol.CodeUnknown:
		return true
	}
	return false
}

// barrierReply checks the reply to a commit barrier and takes what it
// says: a batch's reply there means the replies are out of step; ACK:<w>
// raises the watermark (a bare ACK, or one whose value is no id, is a
// balance but no watermark); BAD_REQUEST means a receiver without __COMMIT__,
// whose later barriers are drained windows instead.
func (c *Client) barrierReply(s *session, reply protocol.Reply) error {
	if batchOnly(reply.Code) {
		return fmt.Errorf("%w: commit barrier answered %q, a reply only a __BATCH__ gets: a surplus, missing or reordered reply",
			transport.ErrProtocol, reply.Line)
	}
	v := verdictOf(reply)
	switch {
	case v.Verdict == transport.VerdictAcked:
		c.raiseWatermark(v.Watermark)
	case reply.Code == protocol.CodeBadRequest:
		if !s.noCommit {
			c.log.Warn("edgesocket receiver does not know __COMMIT__ (BAD_REQUEST): replies are checked by draining the window instead",
				slog.String("endpoint", c.cfg.Endpoint))
		}
		s.noCommit = true
	}
	return nil
}

// verdictOf reads a reply to __COMMIT__.
func verdictOf(reply protocol.Reply) transport.CommitResult {
	r := transport.CommitResult{Reply: reply.Line}
	switch reply.Code {
	case protocol.CodeACK:
		w, err := strconv.ParseInt(reply.Value, 10, 64)
		if err == nil && w >= 0 {
			r.Verdict, r.Watermark = transport.VerdictAcked, w
		} else {
			r.Verdict = transport.VerdictUnsupported
		}
	case protocol.CodePending:
		r.Verdict = transport.VerdictPending
	case protocol.CodeRetry:
		r.Verdict = transport.VerdictRetry
	case protocol.CodeResend:
		r.Verdict = transport.VerdictResend
	case protocol.CodeInvalidParam, protocol.CodeBadRequest:
		r.Verdict = transport.VerdictUnsupported
	}
	return r
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
