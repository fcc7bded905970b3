package wal

import "fmt"

// The pending index (index.go, pendingKind) holds the due PENDING rows as
// runs. Appends produce consecutive ids, so appending a group costs one
// index write instead of one per row, and claiming takes runs from the
// front (pendTake). Single rows returned to PENDING (Fail, Release,
// promotion) are merged into their neighbours when they touch.

// pendFitting returns how many ids from the front of the index, at most
// n, have payloads that add up to no more than budget bytes; with first,
// the first id counts whatever its size. A row of a block that does not
// decode counts as empty: its claim only moves it to DEAD. over reports
// that it stopped at an id over the budget.
func (tx *Tx) pendFitting(src pendSource, n, budget int, first bool) (fit int, over bool) {
	got, bytes := 0, 0
	var b *block
	src.each(func(r run, ok bool) bool {
		if !ok {
			return true // pendTake drops it, taking no id
		}
		for id := r.start; id <= r.end && got < n; id++ {
			if b == nil || !b.has(id) {
				b = tx.blockOf(id)
			}
			size := 0
			if b != nil && b.has(id) {
				size = len(b.payload(id))
			}
			if bytes+size > budget && (got > 0 || !first) {
				over = true
				return false
			}
			bytes += size
			got++
		}
		return got < n
	})
	return got, over
}

// pendTake removes and returns up to n ids from the front of src.
func (tx *Tx) pendTake(src pendSource, n int) ([]uint64, error) {
	return src.x.takeRange(src.from, src.below, n, func(k []byte) {
		tx.warnOnCommit("wal: dropped malformed pending index entry", "key", fmt.Sprintf("%x", k))
	})
}

// pendSource is where a claim takes due rows from: the ids from..below-1
// (below 0: no bound) of one lane's pending index.
type pendSource struct {
	x           index
	from, below uint64
	// reuse, when above 0, is the batch id the one row claimed keeps
	// (claimRetries); otherwise a claim that gives ids (claimids.go)
	// gives new ones.
	reuse int64
}

// each is index.each over the source's range.
func (s pendSource) each(fn func(r run, ok bool) bool) {
	if s.from == 0 && s.below == 0 {
		s.x.each(fn)
		return
	}
	s.x.eachFrom(s.from, s.below, func(r run) bool { return fn(r, true) })
}
