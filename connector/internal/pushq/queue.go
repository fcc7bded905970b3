package pushq

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/edge-agent/edge-agent/connector/input"
)

// ItemOverhead is what one queued event costs beside its bytes (slice
// header, callback slot, allocation rounding), so a flood of tiny events
// is bounded too.
const ItemOverhead = 64

// ErrClosed is returned by Put and TryPut once the queue takes no more
// (Drain or Close).
var ErrClosed = errors.New("input is stopping: takes no more events")

// ErrEmpty: a unit holds at least one event (a sender of nothing has
// nothing to wait for).
var ErrEmpty = errors.New("a unit holds no event")

// Queue is safe for concurrent use except Poll, Committed and Drain,
// which are the scheduler's (one goroutine).
type Queue struct {
	max int

	mu      sync.Mutex
	items   []item
	head    int
	bytes   int
	stopped bool
	// space is closed and replaced whenever room frees up, so every
	// waiting Put looks again.
	space chan struct{}
	wake  chan struct{}
	// handed counts the events Poll and Drain handed over.
	handed atomic.Int64
	// closed is closed by Close: senders still waiting give up.
	closed    chan struct{}
	closeOnce sync.Once

	// unacked are the done funcs of the events polled, in Poll order, nil
	// for all but a unit's last event; the scheduler's goroutine only.
	unacked []func()
	uhead   int
}

type item struct {
	payload []byte
	done    func()
}

// New returns a queue holding at most maxBytes (see ItemOverhead).
func New(maxBytes int) *Queue {
	return &Queue{max: maxBytes, space: make(chan struct{}), wake: make(chan struct{}, 1), closed: make(chan struct{})}
}

// Cost is what payloads take of the bound.
func Cost(payloads [][]byte) int {
	n := 0
	for _, p := range payloads {
		n += len(p) + ItemOverhead
	}
	return n
}

// TryPut queues payloads as one unit if they fit now; done (may be nil)
// runs once they are all committed. It reports whether they were queued;
// ErrClosed once the queue takes no more.
func (q *Queue) TryPut(payloads [][]byte, done func()) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.putLocked(payloads, done)
}

func (q *Queue) putLocked(payloads [][]byte, done func()) (bool, error) {
	if q.stopped {
		return false, ErrClosed
	}
	if len(payloads) == 0 {
		return false, ErrEmpty
	}
	cost := Cost(payloads)
	if q.bytes > 0 && q.bytes+cost > q.max {
		return false, nil
	}
	for i, p := range payloads {
		it := item{payload: p}
		if i == len(payloads)-1 {
			it.done = done
		}
		q.items = append(q.items, it)
	}
	q.bytes += cost
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true, nil
}

// Put queues payloads as one unit, waiting for room until ctx ends
// (ctx.Err()) or the queue stops (ErrClosed).
func (q *Queue) Put(ctx context.Context, payloads [][]byte, done func()) error {
	for {
		q.mu.Lock()
		ok, err := q.putLocked(payloads, done)
		space := q.space
		q.mu.Unlock()
		if ok || err != nil {
			return err
		}
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Full reports whether the queue holds anything and one more event of n
// bytes would not fit: a sender told to come back later.
func (q *Queue) Full(n int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes > 0 && q.bytes+n+ItemOverhead > q.max
}

// Bytes is what the queue holds now, counted as for the bound.
func (q *Queue) Bytes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}

// Wakeup fires when events were queued (the input.Waker channel).
func (q *Queue) Wakeup() <-chan struct{} { return q.wake }

// Poll appends up to max queued events to dst, never waiting.
func (q *Queue) Poll(dst []input.Event, max int) []input.Event {
	q.mu.Lock()
	n := min(max, len(q.items)-q.head)
	for _, it := range q.items[q.head : q.head+n] {
		dst = append(dst, input.Event{Payload: it.payload})
		q.bytes -= len(it.payload) + ItemOverhead
		q.unacked = append(q.unacked, it.done)
	}
	clear(q.items[q.head : q.head+n])
	q.head += n
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 1024 && q.head > len(q.items)/2 {
		rest := copy(q.items, q.items[q.head:])
		clear(q.items[rest:])
		q.items, q.head = q.items[:rest], 0
	}
	more := q.head < len(q.items)
	q.handed.Add(int64(n))
	if n > 0 {
		close(q.space)
		q.space = make(chan struct{})
	}
	q.mu.Unlock()
	if more {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return dst
}

// Handed is how many events Poll and Drain have handed over. Safe for
// concurrent use.
func (q *Queue) Handed() int64 { return q.handed.Load() }

// Committed runs the done funcs of the next n events polled: the
// scheduler stored them.
func (q *Queue) Committed(n int) {
	end := min(q.uhead+n, len(q.unacked))
	for _, done := range q.unacked[q.uhead:end] {
		if done != nil {
			done()
		}
	}
	clear(q.unacked[q.uhead:end])
	q.uhead = end
	if q.uhead == len(q.unacked) {
		q.unacked, q.uhead = q.unacked[:0], 0
	} else if q.uhead > 1024 && q.uhead > len(q.unacked)/2 {
		rest := copy(q.unacked, q.unacked[q.uhead:])
		clear(q.unacked[rest:])
		q.unacked, q.uhead = q.unacked[:rest], 0
	}
}

// Drain stops taking units and appends every queued event to dst, so
// the scheduler stores them before Close and their senders hear yes.
func (q *Queue) Drain(dst []input.Event) []input.Event {
	q.Stop()
	return q.Poll(dst, int(^uint(0)>>1))
}

// Stop makes every Put and TryPut from now on, and those waiting, fail
// with ErrClosed. Idempotent.
func (q *Queue) Stop() {
	q.mu.Lock()
	if !q.stopped {
		q.stopped = true
		close(q.space)
		q.space = make(chan struct{})
	}
	q.mu.Unlock()
}

// Stopped reports whether Stop (or Drain) was called.
func (q *Queue) Stopped() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stopped
}
