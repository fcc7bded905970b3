package agent

import (
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// queue is the loop's view of the outbound queue: the bbolt WAL in
// BEST_EFFORT mode (walQueue), a bounded list in memory in NON mode
// (memQueue). Only the loop goroutine uses it.
type queue interface {
	// Update runs fn in one transaction: everything fn did is committed
	// together (one fsync for the WAL) or not at all.
	Update(fn func(tx queueTx) error) error
	// Full reports whether input must stop being read (backpressure) and
	// the size the decision was based on, in bytes. paused says whether it
	// is stopped now: then it stays stopped until the queue is a quarter
	// below its limit (lowWater), so a queue hovering at the limit does not
	// resume the input for every ack and pause it again at the next read.
	Full(paused bool) (bool, int64)
	// FileBytes is the size of the queue on disk (0 in memory).
	FileBytes() int64
	// Positions returns the input positions last committed for sourceID,
	// for an input reopened by a reload.
	Positions(sourceID string) (map[string][]byte, error)
	// Started reports whether sourceID has run against this queue
	// (MarkStarted committed), for an input a reload adds.
	Started(sourceID string) (bool, error)
	Close() error
}

// queueTx is one transaction. Ids are row ids, not wire batch ids.
type queueTx interface {
	// Append stores one PENDING row per payload.
	Append(sourceID string, payloads [][]byte) error
	// SavePositions stores input positions (nil State deletes the key).
	SavePositions(sourceID string, pos []input.Position) error
	// MarkStarted records that sourceID has run against this queue, so the
	// next Open is not a first start.
	MarkStarted(sourceID string) error
	// Claim moves up to max due PENDING rows to SENDING, in id order,
	// and, when maxBytes is above zero, no more payload bytes than that
	// (the first row whatever its size). bounded reports that it stopped
	// at one of the two bounds rather than for want of due rows.
	Claim(max, maxBytes int, now time.Time) (rows []row, bounded bool, err error)
	// Ack marks rows RECEIVED by the engine.
	Ack(ids []uint64, now time.Time) error
	// Fail charges one attempt; rows become sendable again at notBefore, or
	// DEAD once they reach the attempt limit. It returns how many died.
	Fail(ids []uint64, notBefore time.Time, reason string, now time.Time) (dead int, err error)
	// Release returns rows that never reached the engine to PENDING,
	// without charging an attempt.
	Release(ids []uint64, now time.Time) error
	// CleanupAcked deletes ACKED rows past their retention; it reports how
	// many it deleted and whether more are due.
	CleanupAcked(now time.Time) (deleted int, more bool, err error)
	// Drop deletes the unsent rows that queue.when-full: drop-oldest and
	// queue.max-age-ms no longer keep, oldest commit group first; rows in
	// flight are never dropped.
	Drop(now time.Time) (queueDrops, error)
	// Counts returns row counts per status.
	Counts() (queueCounts, error)
}

// row is a claimed row as the sender needs it.
type row struct {
	ID       uint64
	BatchID  int64
	Payload  []byte
	Attempts int
	// Source is the input id that read it (for `edge-agent tap`).
	Source string
}

// queueCounts mirrors the WAL's per-status counters.
type queueCounts struct {
	Pending, Sending, Acked, Dead int64
	// Received: rows the engine RECEIVED that no checkpoint covers yet
	// (CHECKPOINT delivery).
	Received      int64
	PayloadBytes  int64
	OldestPending time.Time // zero when nothing is pending
	// Lanes is the backlog of each lane (queue.lanes, newest-first);
	// nil without.
	Lanes []LaneStatus
}

// linkWatcher is a queue that wants to know when the link to the engine
// comes back (the WAL's drain plan: rows appended since are new).
type linkWatcher interface {
	linkUp()
}

// lowWater is the level below which a paused input resumes: a quarter
// below limit.
func lowWater(limit int64) int64 { return limit - limit/4 }
