package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// ErrNoWAL: the agent has no WAL open (NON mode, or not started, or
// stopped), so there is nothing to read or change.
var ErrNoWAL = errors.New("the agent has no WAL open")

// adminReq is a change to the WAL an operator asked for while the agent
// runs (`edge-agent db wal-retry-dead` through the API). The loop is the
// WAL's only writer (doc.go), so it runs the change itself, between two of
// its own transactions, and then knows what the change did to its counts.
type adminReq struct {
	fn func(tx *wal.Tx) error
	// run, when set instead of fn, is a change to the inputs (Reread),
	// run on the loop goroutine, which alone may touch them.
	run  func(l *loop) error
	done chan error // buffered: the loop never waits for the asker
}

// WAL is the WAL the agent has open, for reads only (wal.WAL.View runs
// beside the loop's commits in one process); nil when it has none. Writes
// go through UpdateWAL.
func (r *Agent) WAL() *wal.WAL { return r.wal.Load() }

// UpdateWAL runs fn in one WAL transaction on the loop goroutine. Once the
// loop took the request it runs it even if ctx ends, and UpdateWAL waits
// for the outcome: a change made must not be reported as not made.
func (r *Agent) UpdateWAL(ctx context.Context, fn func(tx *wal.Tx) error) error {
	if r.wal.Load() == nil {
		return ErrNoWAL
	}
	req := &adminReq{fn: fn, done: make(chan error, 1)}
	select {
	case r.admin <- req:
	case <-r.stopped:
		return fmt.Errorf("change WAL: %w", ErrNoWAL)
	case <-ctx.Done():
		return fmt.Errorf("change WAL: %w", ctx.Err())
	}
	return <-req.done
}

// serveAdmin runs one request and takes the counts it left as the loop's
// own, as a commit of the loop would.
func (l *loop) serveAdmin(req *adminReq) {
	if req.run != nil {
		req.done <- req.run(l)
		return
	}
	if l.walq == nil {
		req.done <- ErrNoWAL
		return
	}
	var counts wal.Counts
	err := l.walq.w.Update(func(tx *wal.Tx) error {
		if err := req.fn(tx); err != nil {
			return err
		}
		counts = tx.Counts()
		return nil
	})
	if err == nil {
		l.walq.queued = counts.PayloadBytes
		l.cleanup.acked, l.claims.queuedRows = int64(counts.Acked), int64(counts.Pending)
		// Rows may have become PENDING (retry-dead): look for them now.
		l.claims.hint = true
		l.publish(walCounts(counts))
	}
	req.done <- err
}

// takeAdmin serves the requests waiting, without blocking.
func (l *loop) takeAdmin() bool {
	served := false
	for {
		select {
		case req := <-l.r.admin:
			l.serveAdmin(req)
			served = true
		default:
			return served
		}
	}
}
