package client

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

var _ transport.Committer = (*Client)(nil)

// Watermark is the highest ACK:<w> answered so far (transport.Committer).
func (c *Client) Watermark() int64 { return c.stats.watermark.Load() }

// raiseWatermark records an ACK:<w>.
func (c *Client) raiseWatermark(w int64) {
	for {
		cur := c.stats.watermark.Load()
		if w <= cur || c.stats.watermark.CompareAndSwap(cur, w) {
			return
		}
	}
}

// Settle implements transport.Committer: it asks about ids on the current
// session (opening one if need be), sends again the batches found lost,
// lowest first and the lowest alone, and marks the session settled. If
// the session fails on the way, the next one is settled from the start:
// the answers of a session that ended say nothing about the next.
func (c *Client) Settle(ctx context.Context, ids []int64, resend func(id int64) (transport.Batch, bool)) ([]transport.CommitResult, []transport.Result, error) {
	if c.life.Err() != nil {
		return nil, nil, transport.ErrClosed
	}
	ctx, done := c.exclusive(ctx)
	defer done()

	var r reconnects
	for {
		if err := c.ensureSession(ctx, &r); err != nil {
			return nil, nil, err
		}
		s := c.sess
		answers, err := c.ask(ctx, s, ids)
		if err != nil {
			if stopErr := c.afterPump(ctx, err, len(ids)); stopErr != nil {
				return nil, nil, stopErr
			}
			r.lastErr = err
			continue
		}
		s.settled = true
		var again []transport.Batch
		for _, a := range answers {
			if !a.Verdict.Lost() {
				continue
			}
			if b, ok := resend(a.ID); ok {
				again = append(again, b)
			}
		}
		if len(again) == 0 {
			return answers, nil, nil
		}
		c.stats.commitLost.Add(uint64(len(again)))
		c.log.Info("edgesocket engine lost batches it had received; sending them again before any new one",
			slog.Int("lost", len(again)), slog.Int64("lowest", again[0].ID), slog.Int64("highest", again[len(again)-1].ID))
		k := newCall(again, &c.stats)
		if _, err := c.pump(ctx, s, k); err != nil {
			if stopErr := c.afterPump(ctx, err, len(k.ready)); stopErr != nil {
				return nil, nil, stopErr
			}
			r.lastErr = err
			continue
		}
		if k.stopped {
			// The lowest lost batch failed: nothing may pass it.
			s.settled = false
			_, _ = c.giveUp(k, errFirstFailed)
			return answers, k.results, errFirstFailed
		}
		return answers, k.results, nil
	}
}

// Poll implements transport.Committer: one question on the current,
// settled session.
func (c *Client) Poll(ctx context.Context, id int64) (transport.CommitResult, error) {
	if c.life.Err() != nil {
		return transport.CommitResult{}, transport.ErrClosed
	}
	ctx, done := c.exclusive(ctx)
	defer done()
	var r reconnects
	if err := c.ensureSession(ctx, &r); err != nil {
		return transport.CommitResult{}, err
	}
	if c.cfg.Checkpoint && !c.sess.settled {
		return transport.CommitResult{}, transport.ErrUnsettled
	}
	answers, err := c.ask(ctx, c.sess, []int64{id})
	if err != nil {
		if stopErr := c.afterPump(ctx, err, 1); stopErr != nil {
			return transport.CommitResult{}, stopErr
		}
		return transport.CommitResult{}, fmt.Errorf("%w: %s: %w", transport.ErrUnavailable, c.cfg.Endpoint, err)
	}
	return answers[0], nil
}

// ask writes "__COMMIT__:<id>" for each id, pipelined in the window, and
// reads the answers. A reply only a batch gets, or one that began to
// arrive before its commit was sent, ends the session with
// transport.ErrProtocol: the answers are then out of step and none is
// returned.
func (c *Client) ask(ctx context.Context, s *session, ids []int64) ([]transport.CommitResult, error) {
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	out := make([]transport.CommitResult, 0, len(ids))
	ends := make([]int64, 0, min(len(ids), c.cfg.MaxInFlight))
	next := 0
	for len(out) < len(ids) {
		for next < len(ids) && len(ends) < c.cfg.MaxInFlight {
			var err error
			if s.line, err = protocol.AppendCommit(s.line[:0], ids[next]); err != nil {
				return nil, err
			}
			if _, err := s.w.Write(s.line); err != nil {
				return nil, fmt.Errorf("write commit %d: %w", ids[next], err)
			}
			ends = append(ends, s.handed())
			c.stats.commits.Add(1)
			next++
		}
		if err := s.conn.SetDeadline(time.Now().Add(c.cfg.ReadTimeout)); err != nil {
			return nil, fmt.Errorf("commit: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := s.w.Flush(); err != nil {
			return nil, fmt.Errorf("write commits: %w", err)
		}
		id := ids[len(out)]
		from := s.consumed()
		line, err := s.r.ReadLine()
		if err != nil {
			return nil, fmt.Errorf("read the answer to commit %d: %w", id, eofError(err))
		}
		reply := protocol.ParseReply(line)
		if s.in.sentWhenRead(from) < ends[0] {
			return nil, fmt.Errorf("%w: reply %q began to arrive before commit %d was sent", transport.ErrProtocol, reply.Line, id)
		}
		ends = ends[1:]
		if batchOnly(reply.Code) {
			return nil, fmt.Errorf("%w: commit %d answered %q, a reply only a __BATCH__ gets", transport.ErrProtocol, id, reply.Line)
		}
		v := verdictOf(reply)
		v.ID = id
		if v.Verdict == transport.VerdictAcked {
			c.raiseWatermark(v.Watermark)
		}
		out = append(out, v)
	}
	_ = s.conn.SetDeadline(time.Time{})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
