package enginemodel

import "math"

// Record is one decoded record in the source's queue, with the batch id
// it came in.
type Record struct {
	BatchID int64  `json:"batch_id"`
	Payload []byte `json:"payload"`
}

// HighWaterMark is the queue size at which the source answers QUEUE_FULL:
// ceil(capacity*ratio), the product taken in float64 as the engine's Java
// does, so float artefacts carry over (25*0.28 gives 8, not 7).
func HighWaterMark(capacity int, ratio float64) int {
	return int(math.Ceil(float64(capacity) * ratio))
}

// queue is the source's bounded FIFO of records. capacity <= 0 means
// unbounded and never under backpressure.
type queue struct {
	capacity int
	hwm      int
	items    []Record
	head     int // items[head:] are queued; the prefix is garbage
}

func newQueue(capacity int, ratio float64) *queue {
	return &queue{capacity: capacity, hwm: HighWaterMark(capacity, ratio)}
}

func (q *queue) len() int { return len(q.items) - q.head }

// backpressure reports whether the size reached the high-water mark.
func (q *queue) backpressure() bool {
	if q.capacity <= 0 {
		return false
	}
	return q.len() >= q.hwm
}

// offer appends r; false when the queue is at capacity.
func (q *queue) offer(r Record) bool {
	if q.capacity > 0 && q.len() >= q.capacity {
		return false
	}
	q.items = append(q.items, r)
	return true
}

// poll removes the oldest record.
func (q *queue) poll() (Record, bool) {
	if q.len() == 0 {
		return Record{}, false
	}
	r := q.items[q.head]
	q.items[q.head] = Record{}
	q.head++
	// Compact once the dead prefix dominates, so memory follows the size.
	if q.head > 64 && q.head*2 > len(q.items) {
		q.items = append(q.items[:0:0], q.items[q.head:]...)
		q.head = 0
	}
	return r, true
}

// snapshot copies the queued records, oldest first.
func (q *queue) snapshot() []Record {
	out := make([]Record, q.len())
	copy(out, q.items[q.head:])
	return out
}
