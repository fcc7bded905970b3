package journald

import (
	"context"
	"sync"
)

// Queue bounds: the reader stops reading journalctl's output (which then
// blocks on its pipe) while the queue holds this many entries or bytes.
// One entry always fits, however large.
const (
	queueMaxEntries = 4096
	queueMaxBytes   = 8 << 20
)

// queue carries parsed entries from the reader goroutine to Poll. push
// blocks while the queue is full (backpressure: nothing is dropped); pop
// never blocks.
type queue struct {
	mu      sync.Mutex
	items   []*entry
	head    int
	bytes   int
	space   chan struct{} // signalled when pop made room
	wake    chan struct{} // signalled on every push; one pending signal at most
	maxN    int
	maxSize int
}

func newQueue(maxN, maxBytes int) *queue {
	return &queue{space: make(chan struct{}, 1), wake: make(chan struct{}, 1), maxN: maxN, maxSize: maxBytes}
}

func (q *queue) lenLocked() int { return len(q.items) - q.head }

// push appends e, waiting for room until ctx ends. It reports whether e
// was queued.
func (q *queue) push(ctx context.Context, e *entry) bool {
	for {
		q.mu.Lock()
		n := q.lenLocked()
		if n == 0 || (n < q.maxN && q.bytes+e.mem <= q.maxSize) {
			q.items = append(q.items, e)
			q.bytes += e.mem
			q.mu.Unlock()
			select {
			case q.wake <- struct{}{}:
			default:
			}
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-ctx.Done():
			return false
		}
	}
}

// pop takes the oldest entry, or nil.
func (q *queue) pop() *entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lenLocked() == 0 {
		return nil
	}
	e := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	q.bytes -= e.mem
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.items) {
		q.items = append(q.items[:0], q.items[q.head:]...)
		q.head = 0
	}
	select {
	case q.space <- struct{}{}:
	default:
	}
	return e
}
