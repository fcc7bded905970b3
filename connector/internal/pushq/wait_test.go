package pushq

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Each way a waiting sender's Wait ends, and that Drain, unlike Close,
// leaves the senders of what it hands over waiting for their commit.
func TestPendingWait(t *testing.T) {
	unit := [][]byte{[]byte("a"), []byte("b")}
	cases := []struct {
		name string
		// act runs while the unit is queued and waited on.
		act  func(q *Queue, cancel context.CancelFunc)
		want Outcome
	}{
		{"committed", func(q *Queue, _ context.CancelFunc) { q.Poll(nil, 10); q.Committed(2) }, Stored},
		{"drained then committed", func(q *Queue, _ context.CancelFunc) { q.Drain(nil); q.Committed(2) }, Stored},
		{"closed", func(q *Queue, _ context.CancelFunc) { q.Poll(nil, 10); q.Close() }, Closed},
		{"half committed then timed out", func(q *Queue, _ context.CancelFunc) { q.Poll(nil, 10); q.Committed(1) }, TimedOut},
		{"sender left", func(_ *Queue, cancel context.CancelFunc) { cancel() }, Left},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := New(1 << 20)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				p, err := q.TryPutPending(unit)
				if p == nil || err != nil {
					t.Fatalf("TryPutPending: %v, %v", p, err)
				}
				got := make(chan Outcome, 1)
				start := time.Now()
				go func() { got <- p.Wait(ctx, time.Minute) }()
				synctest.Wait()
				c.act(q, cancel)
				o := <-got
				if o != c.want {
					t.Fatalf("Wait = %d, want %d", o, c.want)
				}
				if waited := time.Since(start); (o == TimedOut) != (waited == time.Minute) {
					t.Fatalf("waited %v for outcome %d", waited, o)
				}
			})
		})
	}
}

// TryPutPending refuses as TryPut: nil when the unit does not fit,
// ErrClosed once the queue takes no more.
func TestTryPutPendingRefusals(t *testing.T) {
	q := New(Cost([][]byte{[]byte("x")}))
	if p, err := q.TryPutPending([][]byte{[]byte("x")}); p == nil || err != nil {
		t.Fatalf("first unit: %v, %v", p, err)
	}
	if p, err := q.TryPutPending([][]byte{[]byte("y")}); p != nil || err != nil {
		t.Fatalf("unit over the bound: %v, %v; want nil, nil", p, err)
	}
	q.Close()
	q.Close()
	if p, err := q.TryPutPending([][]byte{[]byte("z")}); p != nil || !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, %v; want nil, ErrClosed", p, err)
	}
}
