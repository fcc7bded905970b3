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
	// stopped: with checkpoint delivery, the first batch of a session
	// ended Failed; nothing more goes out on this call (see onBatch).
	stopped bool
	// feed, segs and from are a Stream's: feed supplies the segments of
	// batches and takes their results; segs are those not yet handed
	// back, in order, the first beginning at index from.
	feed Feed
	segs []segment
	from int
}

// settleHeld makes the held outcomes final: a barrier balanced.
func (k *call) settleHeld() {
	if k.feed != nil {
		for _, i := range k.held {
			k.settled(i)
		}
	}
	k.held = k.held[:0]
}

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
		batches: make([]transport.Batch, 0, len(batches)),
		results: make([]transport.Result, 0, len(batches)),
		ready:   make([]int, 0, len(batches)),
		retries: make([]int, 0, len(batches)),
		lost:    make([]bool, 0, len(batches)),
	}
	k.add(batches, stats)
	return k
}

// add appends batches to the call, checked, and readies the good ones;
// it returns how many it readied.
func (k *call) add(batches []transport.Batch, stats *counters) int {
	lo := len(k.batches)
	k.batches = append(k.batches, batches...)
	k.retries = append(k.retries, make([]int, len(batches))...)
	k.lost = append(k.lost, make([]bool, len(batches))...)
	good := 0
	for j, b := range batches {
		i := lo + j
		k.results = append(k.results, transport.Result{ID: b.ID, Outcome: transport.NotSent})
		if err := protocol.CheckBatch(b.ID, b.Payload); err != nil {
			k.finish(i, transport.Failed, err)
			stats.bad.Add(1)
			continue
		}
		k.ready = append(k.ready, i)
		good++
	}
	return good
}

// Send delivers batches and returns one Result per batch, in order. See
// the package documentation for how each reply and failure is handled.
// A non-nil error means the call stopped early; it wraps one of
// transport.ErrAuthFailed, ErrDecryptFailed, ErrRejected, ErrUnavailable,
// ErrClosed, or ctx's error.
func (c *Client) Send(ctx context.Context, batches []transport.Batch) ([]transport.Result, error) {
	return c.run(ctx, newCall(batches, &c.stats))
}

// run delivers the batches of k, and of the segments its feed adds (a
// Stream), until each has a final outcome or the call stops early.
func (c *Client) run(ctx context.Context, k *call) ([]transport.Result, error) {
	if c.life.Err() != nil {
		return c.giveUp(k, transport.ErrClosed)
	}
	ctx, done := c.exclusive(ctx)
	defer done()

	var r reconnects
	for len(k.ready) > 0 || k.pull(&c.stats) {
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
		if err == nil && k.stopped {
			c.sess.settled = false
			return c.giveUp(k, errFirstFailed)
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

// errFirstFailed ends a checkpoint call whose session's first batch
// failed.
var errFirstFailed = fmt.Errorf("%w: the first batch of the session failed, and no batch may pass it", transport.ErrUnsettled)

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
	k.deliverAll(reason)
	return k.results, reason
}

// readDeadlineSlack: deadlines are refreshed only once they have aged by
// this fraction of ReadTimeout, to keep timer work off the path of every
// reply. A silent engine is thus detected after 15/16 of ReadTimeout at
// the earliest.
const readDeadlineSlack = 16

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
