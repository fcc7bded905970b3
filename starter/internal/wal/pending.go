package wal

import (
	"encoding/binary"
	"fmt"
)

// The pending index holds the due PENDING rows as runs of consecutive row
// ids: key = first id, value = last id (inclusive), runs disjoint. Appends
// produce consecutive ids, so appending a group costs one index write
// instead of one per row, and claiming takes runs from the front. Single
// rows returned to PENDING (Fail, Release, promotion) are merged into
// their neighbours when they touch.

func runEnd(v []byte) (uint64, bool) {
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

// pendAddRange adds first..last, which lie above every id in the index
// (fresh appends).
func (tx *Tx) pendAddRange(first, last uint64) error {
	c := tx.pending.Cursor()
	if k, v := c.Last(); k != nil {
		start, ok1 := keyID(k)
		end, ok2 := runEnd(v)
		if ok1 && ok2 && end+1 == first {
			return tx.putRun(start, last)
		}
	}
	return tx.putRun(first, last)
}

func (tx *Tx) putRun(start, end uint64) error {
	if err := tx.pending.Put(u64key(start), u64key(end)); err != nil {
		return fmt.Errorf("wal %s: pending index: %w", tx.w.path, err)
	}
	return nil
}

// pendAdd adds one id, merging with the runs just below and above it.
func (tx *Tx) pendAdd(id uint64) error {
	c := tx.pending.Cursor()
	k, v := c.Seek(u64key(id))
	var succStart, succEnd uint64
	hasSucc := false
	if k != nil {
		s, _ := keyID(k)
		if s == id {
			return nil // already there
		}
		if e, ok := runEnd(v); ok && s == id+1 {
			succStart, succEnd, hasSucc = s, e, true
		}
		k, v = c.Prev()
	} else {
		k, v = c.Last()
	}
	var predStart uint64
	hasPred := false
	if k != nil {
		s, _ := keyID(k)
		if e, ok := runEnd(v); ok && s < id {
			if e >= id {
				return nil // inside an existing run
			}
			if e+1 == id {
				predStart, hasPred = s, true
			}
		}
	}
	end := id
	if hasSucc {
		if err := tx.pending.Delete(u64key(succStart)); err != nil {
			return fmt.Errorf("wal %s: pending index: %w", tx.w.path, err)
		}
		end = succEnd
	}
	if hasPred {
		return tx.putRun(predStart, end)
	}
	return tx.putRun(id, end)
}

// pendFitting returns how many ids from the front of the index, at most
// n, have payloads that add up to no more than budget bytes; with first,
// the first id counts whatever its size. A row of a block that does not
// decode counts as empty: its claim only moves it to DEAD. over reports
// that it stopped at an id over the budget.
func (tx *Tx) pendFitting(n, budget int, first bool) (fit int, over bool) {
	c := tx.pending.Cursor()
	got, bytes := 0, 0
	var b *block
	for k, v := c.First(); k != nil && got < n; k, v = c.Next() {
		start, ok1 := keyID(k)
		end, ok2 := runEnd(v)
		if !ok1 || !ok2 || end < start {
			continue // pendTake drops it, taking no id
		}
		for id := start; id <= end && got < n; id++ {
			if b == nil || !b.has(id) {
				b = tx.blockOf(id)
			}
			size := 0
			if b != nil && b.has(id) {
				size = len(b.payload(id))
			}
			if bytes+size > budget && (got > 0 || !first) {
				return got, true
			}
			bytes += size
			got++
		}
	}
	return got, false
}

// pendTake removes and returns up to n ids from the front of the index.
func (tx *Tx) pendTake(n int) ([]uint64, error) {
	var out []uint64
	for len(out) < n {
		k, v := tx.pending.Cursor().First()
		if k == nil {
			break
		}
		start, ok1 := keyID(k)
		end, ok2 := runEnd(v)
		if err := tx.pending.Delete(k); err != nil {
			return nil, fmt.Errorf("wal %s: pending index: %w", tx.w.path, err)
		}
		if !ok1 || !ok2 || end < start {
			tx.warnOnCommit("wal: dropped malformed pending index entry", "key", fmt.Sprintf("%x", k))
			continue
		}
		take := min(uint64(n-len(out)), end-start+1)
		for id := start; id < start+take; id++ {
			out = append(out, id)
		}
		if start+take <= end {
			if err := tx.putRun(start+take, end); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// pendContains reports whether id is in a run.
func (tx *ReadTx) pendContains(id uint64) bool {
	c := tx.pending.Cursor()
	// Only the key matters at the seek: an exact hit starts a run. Otherwise
	// the run that could hold id starts at the previous key.
	k, _ := c.Seek(u64key(id))
	var v []byte
	if k != nil {
		if s, _ := keyID(k); s == id {
			return true
		}
		k, v = c.Prev()
	} else {
		k, v = c.Last()
	}
	if k == nil {
		return false
	}
	s, _ := keyID(k)
	e, ok := runEnd(v)
	return ok && s <= id && id <= e
}

// pendIDs returns up to limit (all when <= 0) ids > afterID in order.
func (tx *ReadTx) pendIDs(afterID uint64, limit int) []uint64 {
	var out []uint64
	tx.pendRuns(func(s, e uint64) bool {
		for id := max(s, afterID+1); id <= e; id++ {
			if limit > 0 && len(out) >= limit {
				return false
			}
			out = append(out, id)
		}
		return true
	})
	return out
}

// pendRuns calls fn for each run in order until it returns false;
// malformed entries are passed as (start, 0).
func (tx *ReadTx) pendRuns(fn func(start, end uint64) bool) {
	c := tx.pending.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		s, _ := keyID(k)
		e, _ := runEnd(v)
		if !fn(s, e) {
			return
		}
	}
}
