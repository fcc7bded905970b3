package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
}

// flight is a batch awaiting its reply.
type flight struct {
	i   int   // index in call.batches
	end int64 // session stream offset just past its line
}

func (k *call) requeue(i int) {
	at, _ := slices.BinarySearch(k.ready, i)
	k.ready = slices.Insert(k.ready, at, i)
}

func (k *call) finish(i int, o transport.Outcome, err error) {
	k.results[i].Outcome = o
	k.results[i].Err = err
}

// Send delivers batches and returns one Result per batch, in order. See
// the package documentation for how each reply and failure is handled.
// A non-nil error means the call stopped early; it wraps one of
// transport.ErrAuthFailed, ErrDecryptFailed, ErrRejected, ErrUnavailable,
// ErrClosed, or ctx's error.
func (c *Client) Send(ctx context.Context, batches []transport.Batch) ([]transport.Result, error) {
	k := &call{
		batches: batches,
		results: make([]transport.Result, len(batches)),
		ready:   make([]int, 0, len(batches)),
		retries: make([]int, len(batches)),
		lost:    make([]bool, len(batches)),
	}
	for i, b := range batches {
		k.results[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent}
		// Checked once here: pump writes the batch, and any resend of
		// it, without scanning the payload again.
		if err := protocol.CheckBatch(b.ID, b.Payload); err != nil {
			k.finish(i, transport.Failed, err)
			c.stats.bad.Add(1)
			continue
		}
		k.ready = append(k.ready, i)
	}
	if c.life.Err() != nil {
		return c.giveUp(k, transport.ErrClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()

	streak := 0 // connect attempts since the last batch reached a final outcome
	var lastErr error
	for len(k.ready) > 0 {
		if err := c.stopped(ctx); err != nil {
			c.dropSession()
			return c.giveUp(k, err)
		}
		if c.sess != nil {
			if err := c.sess.check(); err != nil {
				if errors.Is(err, transport.ErrProtocol) {
					c.log.Error(brokeProtocol, slog.String("when", "idle between calls"), slog.Any("error", err))
				} else {
					c.log.Info("edgesocket session found closed while idle; reconnecting", slog.Any("error", err))
				}
				c.dropSession()
			}
		}
		if c.sess == nil {
			if streak >= c.cfg.MaxReconnectCycles {
				return c.giveUp(k, fmt.Errorf("%w: %s: %d connect attempts failed, last error: %w",
					transport.ErrUnavailable, c.cfg.Endpoint, streak, lastErr))
			}
			if streak > 0 {
				if err := backoff.Sleep(ctx, c.backoff.Jittered(streak-1)); err != nil {
					return c.giveUp(k, c.stopped(ctx))
				}
			}
			streak++
			s, err := c.connect(ctx)
			if err != nil {
				if stopErr := c.stopped(ctx); stopErr != nil {
					return c.giveUp(k, stopErr)
				}
				if errors.Is(err, transport.ErrAuthFailed) || errors.Is(err, transport.ErrRejected) {
					c.log.Error("edgesocket session refused", slog.Any("error", err))
					return c.giveUp(k, err)
				}
				if errors.Is(err, transport.ErrProtocol) {
					c.log.Error(brokeProtocol, slog.String("when", "authenticating"), slog.Int("attempt", streak), slog.Any("error", err))
				} else {
					c.log.Warn("edgesocket connect failed", slog.Int("attempt", streak), slog.Any("error", err))
				}
				lastErr = err
				continue
			}
			c.setSession(s)
			c.log.Info("edgesocket session authenticated", slog.Int("attempt", streak))
		}
		progress, err := c.pump(ctx, c.sess, k)
		if progress {
			streak = 0
		}
		if err == nil {
			continue // ready is empty
		}
		c.dropSession()
		if stopErr := c.stopped(ctx); stopErr != nil {
			return c.giveUp(k, stopErr)
		}
		if errors.Is(err, transport.ErrDecryptFailed) {
			c.log.Error("edgesocket engine cannot decrypt", slog.Any("error", err))
			return c.giveUp(k, err)
		}
		if errors.Is(err, transport.ErrProtocol) {
			c.log.Error(brokeProtocol, slog.String("when", "reading batch replies"), slog.Int("unsettled", len(k.ready)), slog.Any("error", err))
		} else {
			c.log.Warn("edgesocket session lost; reconnecting", slog.Int("unanswered", len(k.ready)), slog.Any("error", err))
		}
		lastErr = err
	}
	return k.results, nil
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
// owed replies for are back in ready). progress reports whether any batch
// reached a final outcome.
//
// A reply settles the oldest batch in flight only if that batch's line was
// handed to the socket before the reply began to be read: the engine
// cannot answer what it has not received. Anything else is a reply to
// nothing (unsolicited, or surplus), and the session ends with
// transport.ErrProtocol before it can settle another batch.
func (c *Client) pump(ctx context.Context, s *session, k *call) (progress bool, err error) {
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	inflight := make([]flight, 0, min(s.win.size, len(k.ready)))
	defer func() {
		// Only a connection failure says something about the batches
		// on it (the engine may have choked on one). A protocol
		// violation says nothing about them, nor does the caller
		// stopping: the agent shutting down must not cost a row an
		// attempt, so those batches end NotSent if the call gives up.
		lost := err != nil && !errors.Is(err, transport.ErrProtocol) && c.stopped(ctx) == nil
		for _, f := range inflight {
			if lost && s.onWire(f.end) {
				k.lost[f.i] = true
			}
			k.requeue(f.i)
		}
	}()
	var pauseUntil, deadlineSet time.Time
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
	for {
		paused := !pauseUntil.IsZero() && time.Now().Before(pauseUntil)
		if !paused {
			for len(inflight) < s.win.size && len(k.ready) > 0 {
				i := k.ready[0]
				s.line = protocol.AppendCheckedBatch(s.line[:0], k.batches[i].ID, k.batches[i].Payload)
				if len(s.line) > s.w.Available() { // this write reaches the socket
					if err := fresh(); err != nil {
						return progress, err
					}
				}
				k.ready = k.ready[1:]
				inflight = append(inflight, flight{i: i, end: s.handed() + int64(len(s.line))})
				if _, err := s.w.Write(s.line); err != nil {
					return progress, fmt.Errorf("write batch %d: %w", k.batches[i].ID, err)
				}
				c.stats.sent.Add(1)
			}
			c.stats.notePeak(len(inflight))
		}
		if len(inflight) == 0 {
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
		limited := !paused && len(inflight) >= s.win.size && len(k.ready) > 0
		from := s.consumed()
		line, err := s.r.ReadLine()
		if err != nil {
			return progress, fmt.Errorf("read reply for batch %d: %w", k.batches[inflight[0].i].ID, eofError(err))
		}
		i, end := inflight[0].i, inflight[0].end
		id := k.batches[i].ID
		reply := protocol.ParseReply(line)
		if s.in.sentWhenRead(from) < inflight[0].end {
			return progress, fmt.Errorf("%w: reply %q began to arrive before batch %d, the oldest unanswered one, was sent: "+
				"it answers nothing (an unsolicited or a surplus reply)", transport.ErrProtocol, reply.Line, id)
		}
		inflight = inflight[1:]
		switch reply.Code {
		case protocol.CodeReceived:
			k.finish(i, transport.Received, nil)
			c.stats.received.Add(1)
			s.win.received(limited)
			progress = true
		case protocol.CodeRetry:
			c.stats.retries.Add(1)
			k.retries[i]++
			if k.retries[i] >= c.cfg.MaxBatchSendAttempts {
				k.finish(i, transport.Failed, fmt.Errorf("batch %d: exceeded max batch send attempts (%d) without RECEIVED (engine kept replying RETRY)", id, c.cfg.MaxBatchSendAttempts))
				c.stats.bad.Add(1)
				progress = true
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
			c.stats.bad.Add(1)
			progress = true
		}
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
