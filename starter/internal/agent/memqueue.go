package agent

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// memQueue is the NON-mode queue: rows live only in memory, positions are
// not kept, a row the engine refused is dropped (Fail reports it as dead).
// A row that never reached the engine (released) stays queued and is sent
// when the engine is back: NON stays at-most-once without dropping rows an
// outage merely delayed. The queue is bounded by maxRows and maxBytes: when
// full the loop stops reading input instead of growing.
type memQueue struct {
	maxRows  int
	maxBytes int64

	nextID    uint64
	nextBatch int64
	pending   []row // sorted by ID
	sending   map[uint64]row
	bytes     int64
	positions map[string]map[string][]byte // by source id, then key; see SavePositions
	started   map[string]bool              // source ids MarkStarted saw
}

var _ queue = (*memQueue)(nil)

func newMemQueue(maxRows int, maxBytes int64, now time.Time) *memQueue {
	return &memQueue{
		maxRows:  maxRows,
		maxBytes: maxBytes,
		// Seeded from the clock like the WAL's next_batch_id, so ids keep
		// growing across restarts (the engine may expect that).
		nextBatch: now.UnixMilli() * 1000,
		sending:   make(map[uint64]row),
	}
}

func (q *memQueue) Update(fn func(tx queueTx) error) error { return fn(q) }

func (q *memQueue) Full(paused bool) (bool, int64) {
	n := int64(len(q.pending) + len(q.sending))
	if paused {
		return n > lowWater(int64(q.maxRows)) || (q.maxBytes > 0 && q.bytes > lowWater(q.maxBytes)), q.bytes
	}
	return n >= int64(q.maxRows) || (q.maxBytes > 0 && q.bytes >= q.maxBytes), q.bytes
}

func (q *memQueue) FileBytes() int64 { return 0 }

func (q *memQueue) Close() error {
	q.pending, q.sending, q.bytes = nil, nil, 0
	return nil
}

func (q *memQueue) Append(source string, payloads [][]byte) error {
	for _, p := range payloads {
		q.nextID++
		q.nextBatch++
		q.pending = append(q.pending, row{ID: q.nextID, BatchID: q.nextBatch, Payload: p, Source: source})
		q.bytes += int64(len(p))
	}
	return nil
}

// SavePositions keeps the positions in memory only: nothing survives a
// restart in NON mode, but an input a reload reopens goes on where the
// old one stopped instead of starting over.
func (q *memQueue) SavePositions(sourceID string, pos []input.Position) error {
	if q.positions == nil {
		q.positions = make(map[string]map[string][]byte)
	}
	m := q.positions[sourceID]
	if m == nil {
		m = make(map[string][]byte)
		q.positions[sourceID] = m
	}
	for _, p := range pos {
		if p.State == nil {
			delete(m, p.Key)
			continue
		}
		m[p.Key] = p.State
	}
	return nil
}

func (q *memQueue) Positions(sourceID string) (map[string][]byte, error) {
	return maps.Clone(q.positions[sourceID]), nil
}

func (q *memQueue) MarkStarted(sourceID string) error {
	if q.started == nil {
		q.started = make(map[string]bool)
	}
	q.started[sourceID] = true
	return nil
}

func (q *memQueue) Started(sourceID string) (bool, error) { return q.started[sourceID], nil }

func (q *memQueue) Claim(max, maxBytes int, _ time.Time) ([]row, bool, error) {
	n, bytes := 0, 0
	for n < min(max, len(q.pending)) {
		size := len(q.pending[n].Payload)
		if maxBytes > 0 && n > 0 && bytes+size > maxBytes {
			break
		}
		bytes += size
		n++
	}
	bounded := n < len(q.pending)
	out := make([]row, n)
	copy(out, q.pending[:n])
	q.pending = slices.Delete(q.pending, 0, n)
	for _, r := range out {
		q.sending[r.ID] = r
	}
	return out, bounded, nil
}

func (q *memQueue) forget(ids []uint64) int {
	n := 0
	for _, id := range ids {
		if r, ok := q.sending[id]; ok {
			delete(q.sending, id)
			q.bytes -= int64(len(r.Payload))
			n++
		}
	}
	return n
}

func (q *memQueue) Ack(ids []uint64, _ time.Time) error {
	q.forget(ids)
	return nil
}

// Fail drops the rows: NON mode never retries a row the engine refused.
func (q *memQueue) Fail(ids []uint64, _ time.Time, _ string, _ time.Time) (int, error) {
	return q.forget(ids), nil
}

func (q *memQueue) Release(ids []uint64, _ time.Time) error {
	for _, id := range ids {
		if r, ok := q.sending[id]; ok {
			delete(q.sending, id)
			q.pending = append(q.pending, r)
		}
	}
	// Released rows are older than most pending ones: keep id order.
	slices.SortFunc(q.pending, func(a, b row) int { return cmp.Compare(a.ID, b.ID) })
	return nil
}

func (q *memQueue) CleanupAcked(time.Time) (int, bool, error) { return 0, false, nil }

// Drop drops nothing: the queue.* bounds are the WAL's; the memory queue
// is bounded by its own rows and bytes (newMemQueue).
func (q *memQueue) Drop(time.Time) (queueDrops, error) { return queueDrops{}, nil }

func (q *memQueue) Counts() (queueCounts, error) {
	return queueCounts{
		Pending:      int64(len(q.pending)),
		Sending:      int64(len(q.sending)),
		PayloadBytes: q.bytes,
	}, nil
}
