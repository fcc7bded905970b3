package wal

import (
	"cmp"
	"fmt"
	"slices"
)

// Batch ids given at claim, through salvage (claimids.go). A source in
// that mode keeps its mode in the copy, and every row it copies keeps the
// batch id a claim gave it (claim_ids), under the row's id in the copy
// (a renumbered row's new one), with its claim_retry entry when it had
// one or was SENDING (PENDING again, as at every start). A row of a block
// salvage cannot read loses its payload, but the engine may hold or wait
// for its id: each id claim_ids gave a row salvage does not copy goes to
// a stand-in (reason ReasonSalvageLost, no source), as the WAL does for a
// row given up after its id went out, so the engine's watermark never
// stalls on it; salvage's gap records list these ids. An id whose
// claim_ids entry was on an unreadable page is still known when its row
// is listed in claim_retry or held as received (both name the id); the
// other rows of such a page go out again under new ids.

// claimCopy is what salvage carries of the claim ids: read from the
// source by the first walk, given to the copied rows as they are added.
type claimCopy struct {
	on     bool             // the source gives ids at claim
	runs   []run            // claim_ids runs read, sorted by start once read
	retry  map[uint64]int64 // claim_retry: row id -> batch id
	extra  map[uint64]int64 // ids claim_ids lacks that claim_retry or the received index give
	used   map[uint64]bool  // source row ids whose claim id a copied row took
	out    map[uint64]int64 // copy's row id -> batch id
	again  map[uint64]bool  // copy's row ids to list in claim_retry
	sorted bool
}

// noteRun records a claim_ids run of the source.
func (c *claimCopy) noteRun(r run) {
	c.runs = append(c.runs, r)
	c.sorted = false
}

// fallback takes the ids claim_ids lacks from claim_retry and from
// received, the source's received runs: a damaged page of claim_ids
// loses no id these name.
func (c *claimCopy) fallback(received []run) {
	if !c.on {
		return
	}
	note := func(id uint64, b int64) {
		if _, ok := c.batchOf(id); ok || b <= 0 {
			return
		}
		if c.extra == nil {
			c.extra = map[uint64]int64{}
		}
		c.extra[id] = b
	}
	for id, b := range c.retry {
		note(id, b)
	}
	for _, r := range received {
		for id := r.start; id <= r.end && id >= r.start; id++ {
			note(id, r.batchOf(id))
		}
	}
}

// batchOf returns the batch id a claim gave source row id.
func (c *claimCopy) batchOf(id uint64) (int64, bool) {
	if b, ok := c.extra[id]; ok {
		return b, true
	}
	if !c.sorted {
		slices.SortFunc(c.runs, func(a, b run) int { return cmp.Compare(a.start, b.start) })
		c.sorted = true
	}
	i, found := slices.BinarySearchFunc(c.runs, id, func(r run, id uint64) int {
		switch {
		case r.end < id:
			return -1
		case r.start > id:
			return 1
		}
		return 0
	})
	if !found {
		return 0, false
	}
	return c.runs[i].batchOf(id), true
}

// take gives copied row r, source row srcID, the claim id of srcID.
func (c *claimCopy) take(r *Row, srcID uint64) {
	if !c.on {
		return
	}
	b, ok := c.batchOf(srcID)
	if !ok {
		return
	}
	if c.used == nil {
		c.used, c.out, c.again = map[uint64]bool{}, map[uint64]int64{}, map[uint64]bool{}
	}
	c.used[srcID] = true
	c.out[r.ID] = b
	// PENDING with an id already given is PENDING again under it
	// (released, failed, or SENDING when the source stopped).
	if _, listed := c.retry[srcID]; listed || restStatus(r.Status) == StatusPending {
		c.again[r.ID] = true
	}
}

// lost returns the stand-ins of the claim ids no copied row took, in
// batch id order, made at now (unix ms).
func (c *claimCopy) lost(now int64) []Gap {
	var out []Gap
	for _, r := range c.runs {
		for id := r.start; id <= r.end && id >= r.start; id++ {
			if !c.used[id] {
				out = append(out, Gap{BatchID: r.batchOf(id), Reason: ReasonSalvageLost, CreatedMS: now})
			}
		}
	}
	for id, b := range c.extra {
		if !c.used[id] {
			out = append(out, Gap{BatchID: b, Reason: ReasonSalvageLost, CreatedMS: now})
		}
	}
	slices.SortFunc(out, func(a, b Gap) int { return cmp.Compare(a.BatchID, b.BatchID) })
	return slices.CompactFunc(out, func(a, b Gap) bool { return a.BatchID == b.BatchID })
}

// nextBatch returns the id the copy's next claim gives: the one after
// every id the source gave, so the ids go on without a gap; 0 when the
// source tells none.
func (c *claimCopy) nextBatch(src int64) int64 {
	for _, r := range c.runs {
		src = max(src, r.batchOf(r.end)+1)
	}
	for _, b := range c.extra {
		src = max(src, b+1)
	}
	return src
}

// restoreClaim records copied row id's claim id in the copy's claim_ids
// and, when it goes out again, in claim_retry.
func (tx *Tx) restoreClaim(id uint64, c *claimCopy) error {
	if c == nil || !tx.claimsIDs() {
		return nil
	}
	b, ok := c.out[id]
	if !ok {
		return nil
	}
	if err := tx.ids.add(run{start: id, end: id, batch: b}); err != nil {
		return err
	}
	if c.again[id] {
		if err := tx.retry.Put(u64key(uint64(b)), u64key(id)); err != nil {
			return fmt.Errorf("wal %s: claim retry of row %d: %w", tx.w.path, id, err)
		}
	}
	return nil
}

// batchIDRanges returns the batch ids of gs as runs of consecutive ids.
func batchIDRanges(gs []Gap) [][2]int64 {
	var out [][2]int64
	for _, g := range gs {
		if n := len(out); n > 0 && out[n-1][1]+1 == g.BatchID {
			out[n-1][1] = g.BatchID
			continue
		}
		out = append(out, [2]int64{g.BatchID, g.BatchID})
	}
	return out
}
