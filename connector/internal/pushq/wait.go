package pushq

import (
	"context"
	"time"
)

// Outcome is what became of a unit its sender waited on.
type Outcome int

const (
	// Stored: the unit was committed; the sender hears yes.
	Stored Outcome = iota
	// Closed: the input closed before the commit; the sender resends.
	Closed
	// TimedOut: no commit within the wait; the unit may still be stored,
	// so a resend may duplicate.
	TimedOut
	// Left: the sender's context ended first (it went away).
	Left
)

// Pending is a queued unit whose commit its sender waits for.
type Pending struct {
	done   chan struct{}
	closed <-chan struct{}
}

// TryPutPending queues payloads as one unit if they fit now, as TryPut,
// and returns the unit to wait on; nil and no error when they do not fit.
func (q *Queue) TryPutPending(payloads [][]byte) (*Pending, error) {
	p := &Pending{done: make(chan struct{}), closed: q.closed}
	ok, err := q.TryPut(payloads, func() { close(p.done) })
	if !ok || err != nil {
		return nil, err
	}
	return p, nil
}

// Wait returns once the unit is committed, the queue is closed, timeout
// passed or ctx ended, whichever comes first.
func (p *Pending) Wait(ctx context.Context, timeout time.Duration) Outcome {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return Stored
	case <-p.closed:
		return Closed
	case <-timer.C:
		return TimedOut
	case <-ctx.Done():
		return Left
	}
}

// Close stops the queue (as Stop) and ends the Wait of every unit not
// committed with Closed: the input is going away. Unlike Drain, which
// lets the senders of what it hands over hear yes. Idempotent.
func (q *Queue) Close() {
	q.Stop()
	q.closeOnce.Do(func() { close(q.closed) })
}
