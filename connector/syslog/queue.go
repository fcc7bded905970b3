package syslog

import (
	"sync"

	"github.com/edge-agent/edge-agent/connector/input"
)

// itemOverhead is what one queued event costs beside its bytes (slice
// header and allocation rounding), so a flood of tiny messages is bounded
// too.
const itemOverhead = 64

// queue holds event payloads between the reader goroutines and Poll,
// bounded in bytes. It is safe for concurrent use.
type queue struct {
	mu    sync.Mutex
	items [][]byte
	head  int
	bytes int
	max   int
	// space is signalled when take frees room; a waiting pusher that
	// still leaves room passes the signal on.
	space chan struct{}
	// wake is the input's Waker channel.
	wake chan struct{}
}

func newQueue(maxBytes int) *queue {
	return &queue{max: maxBytes, space: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// tryPush adds b when it fits (an empty queue takes any one item) and
// reports whether it did.
func (q *queue) tryPush(b []byte) bool {
	q.mu.Lock()
	ok := q.bytes == 0 || q.bytes+len(b)+itemOverhead <= q.max
	if ok {
		q.items = append(q.items, b)
		q.bytes += len(b) + itemOverhead
	}
	room := q.bytes < q.max
	q.mu.Unlock()
	if ok {
		signal(q.wake)
		if room {
			signal(q.space)
		}
	}
	return ok
}

// push adds b, waiting for room (the TCP reader stops reading meanwhile)
// until done is closed; from then on it adds b whatever the size, so a
// message read is never lost at shutdown. It reports whether it waited.
func (q *queue) push(b []byte, done <-chan struct{}) (waited bool) {
	for !q.tryPush(b) {
		waited = true
		select {
		case <-q.space:
		case <-done:
			q.mu.Lock()
			q.items = append(q.items, b)
			q.bytes += len(b) + itemOverhead
			q.mu.Unlock()
			signal(q.wake)
			return waited
		}
	}
	return waited
}

// take appends up to n queued payloads to dst as events.
func (q *queue) take(dst []input.Event, n int) ([]input.Event, int) {
	q.mu.Lock()
	avail := len(q.items) - q.head
	n = min(n, avail)
	for _, b := range q.items[q.head : q.head+n] {
		dst = append(dst, input.Event{Payload: b})
		q.bytes -= len(b) + itemOverhead
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
	q.mu.Unlock()
	if n > 0 {
		signal(q.space)
	}
	if more {
		signal(q.wake)
	}
	return dst, n
}
