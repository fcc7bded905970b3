package wal

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The sending index holds the SENDING rows as runs of consecutive row ids
// claimed together: key = first id, value = last id (inclusive) and claim
// time (unix ms), 8 bytes each; runs are disjoint. It is the only record
// of SENDING (codec.go). Claim takes rows from the front of the pending
// runs, so claiming a group costs one index write instead of one per row,
// and acking that group costs up to three (delete the run, put what is
// left on either side) instead of one per row.

// sendRun is one run of the sending index.
type sendRun struct {
	start, end uint64
	at         int64 // claim time, unix ms
}

func decodeSendRun(k, v []byte) (sendRun, bool) {
	start, ok := keyID(k)
	if !ok {
		return sendRun{}, false
	}
	if len(v) != 16 {
		return sendRun{}, false
	}
	end := binary.BigEndian.Uint64(v)
	if end < start {
		return sendRun{}, false
	}
	return sendRun{start: start, end: end, at: int64(binary.BigEndian.Uint64(v[8:]))}, true
}

func (r sendRun) value() []byte {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, r.end)
	binary.BigEndian.PutUint64(v[8:], uint64(r.at))
	return v
}

// runCandidate returns the entry of a run index (keyed by a run's first
// id) with the greatest key <= id: the only run that may hold id. nil
// when there is none.
func runCandidate(b *bolt.Bucket, id uint64) (k, v []byte) {
	c := b.Cursor()
	k, v = c.Seek(u64key(id))
	if k != nil {
		if s, _ := keyID(k); s == id {
			return k, v
		}
		return c.Prev()
	}
	return c.Last()
}

// sendFind returns the run holding id; ok=false when id is not SENDING.
func (tx *ReadTx) sendFind(id uint64) (sendRun, bool) {
	k, v := runCandidate(tx.sending, id)
	if k == nil {
		return sendRun{}, false
	}
	r, ok := decodeSendRun(k, v)
	if !ok || id < r.start || id > r.end {
		return sendRun{}, false
	}
	return r, true
}

// sendPut stores run r.
func (tx *Tx) sendPut(r sendRun) error {
	if err := tx.sending.Put(u64key(r.start), r.value()); err != nil {
		return fmt.Errorf("wal %s: sending index: %w", tx.w.path, err)
	}
	return nil
}

// sendCut removes a..b (inside r) from run r.
func (tx *Tx) sendCut(r sendRun, a, b uint64) error {
	if r.start < a {
		if err := tx.sendPut(sendRun{start: r.start, end: a - 1, at: r.at}); err != nil {
			return err
		}
	} else if err := tx.sending.Delete(u64key(r.start)); err != nil {
		return fmt.Errorf("wal %s: sending index: %w", tx.w.path, err)
	}
	if b < r.end {
		return tx.sendPut(sendRun{start: b + 1, end: r.end, at: r.at})
	}
	return nil
}

// takeFrom says which in-flight statuses takeIDs takes rows from.
type takeFrom uint8

const (
	fromSending takeFrom = 1 << iota
	fromReceived
	fromEither = fromSending | fromReceived
)

// takeIDs removes ids from SENDING or RECEIVED (as from says). visit is
// called for each id that is, in order, before it leaves its index; it
// returns false to leave that id where it is (a row it cannot use:
// skipped, logged by visit). Other ids are skipped with a warning:
// acking twice, or a row an operator already moved, must not abort the
// whole group commit. Each stretch of consecutive ids inside one run
// costs one seek and at most three index writes.
func (tx *Tx) takeIDs(op string, ids []uint64, from takeFrom, visit func(id uint64) (bool, error)) error {
	for i := 0; i < len(ids); {
		first := ids[i]
		var end uint64
		var cut func(a, b uint64) error
		var count *int64
		if run, ok := tx.sendFind(first); ok && from&fromSending != 0 {
			end, count = run.end, &tx.ctr.sending
			cut = func(a, b uint64) error { return tx.sendCut(run, a, b) }
		} else if run, ok := tx.recvFind(first); ok && from&fromReceived != 0 {
			end, count = run.end, &tx.ctr.received
			cut = func(a, b uint64) error { return tx.recvCut(run, a, b) }
		} else {
			tx.warnNotInFlight(op, first, from)
			i++
			continue
		}
		j, refused := i, false
		for j < len(ids) && ids[j] == first+uint64(j-i) && ids[j] <= end {
			ok, err := visit(ids[j])
			if err != nil {
				return err
			}
			if !ok {
				refused = true
				break
			}
			j++
		}
		if j > i {
			if err := cut(first, ids[j-1]); err != nil {
				return err
			}
			*count -= int64(j - i)
			tx.dirty = true
		}
		if refused {
			j++ // stays where it is
		}
		i = j
	}
	return nil
}

func (tx *Tx) warnNotInFlight(op string, id uint64, from takeFrom) {
	r, ok, _ := tx.row(id)
	if !ok {
		tx.w.log.Warn("wal: unknown row id", "op", op, "row_id", id)
		return
	}
	want := map[takeFrom]string{fromSending: "SENDING", fromReceived: "RECEIVED", fromEither: "SENDING or RECEIVED"}[from]
	tx.w.log.Warn("wal: row is not "+want, "op", op, "row_id", id, "status", r.Status.String())
}

// sendIDs returns up to limit (all when <= 0) SENDING ids > afterID, in
// order.
func (tx *ReadTx) sendIDs(afterID uint64, limit int) []uint64 {
	var out []uint64
	tx.sendRuns(func(r sendRun, ok bool) bool {
		if !ok {
			return true
		}
		for id := max(r.start, afterID+1); id <= r.end; id++ {
			if limit > 0 && len(out) >= limit {
				return false
			}
			out = append(out, id)
		}
		return true
	})
	return out
}

// sendRuns calls fn for each run in key order until it returns false;
// ok=false marks a malformed entry (r.start is its key, when it has one).
func (tx *ReadTx) sendRuns(fn func(r sendRun, ok bool) bool) {
	c := tx.sending.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		r, ok := decodeSendRun(k, v)
		if !ok {
			r.start, _ = keyID(k)
		}
		if !fn(r, ok) {
			return
		}
	}
}

// SendingIDs returns the ids of every SENDING row, in id order.
func (tx *ReadTx) SendingIDs() []uint64 { return tx.sendIDs(0, 0) }
