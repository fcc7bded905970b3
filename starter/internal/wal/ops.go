package wal

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Operator operations, used by the `edge-agent db` write commands. They
// touch every row of one state in one transaction; the agent is stopped.

// RetryDead moves every DEAD row back to PENDING, due now, with its
// attempts reset, and returns how many moved. Rows quarantined for a bad
// block go back to DEAD at their next claim.
func (tx *Tx) RetryDead(now int64) (int, error) {
	n := 0
	for _, k := range firstKeys(tx.dead, int(^uint(0)>>1)) {
		id, ok := keyID(k)
		if !ok {
			continue
		}
		st, ok := decodeState(tx.state.Get(k))
		if !ok || st.status != StatusDead {
			tx.w.log.Warn("wal: dead index entry without a DEAD row", "row_id", id)
			continue
		}
		if err := tx.dead.Delete(k); err != nil {
			return n, fmt.Errorf("wal %s: retry dead row %d: %w", tx.w.path, id, err)
		}
		tx.ctr.dead--
		st.attempts, st.notBefore, st.reason, st.updated = 0, 0, "", now
		if err := tx.putPending(id, &st, now); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// PurgeDead deletes every DEAD row and returns how many.
func (tx *Tx) PurgeDead() (int, error) {
	n := 0
	var f blockFreer
	for _, k := range firstKeys(tx.dead, int(^uint(0)>>1)) {
		if err := tx.dead.Delete(k); err != nil {
			return n, fmt.Errorf("wal %s: purge dead: %w", tx.w.path, err)
		}
		tx.dirty = true
		id, ok := keyID(k)
		if !ok {
			continue
		}
		deleted, err := tx.deleteRow(&f, id, StatusDead)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, f.free(tx)
}

// PurgeAcked deletes every ACKED row acked at or before olderThan (unix ms).
func (tx *Tx) PurgeAcked(olderThan int64) (int, error) { return tx.CleanupAcked(olderThan, 0) }

// Problem is one inconsistency found by Verify.
type Problem struct {
	RowID uint64 `json:"row_id,omitempty"` // 0 when not about one row
	What  string `json:"what"`
}

func (p Problem) String() string {
	if p.RowID == 0 {
		return p.What
	}
	return fmt.Sprintf("row %d: %s", p.RowID, p.What)
}

// Verify checks every block's checksum, that every row sits in exactly
// the index of its status and every index entry points at such a row,
// that every block still holds a row and every state entry belongs to
// one, that the counters match a recount and the id allocators are ahead
// of the rows; WAL.Verify runs bbolt's check of the tree first. It
// returns at most limit problems (all when limit <= 0). Rows already DEAD
// for a bad block are not problems: they were handled. O(rows); for
// operators and tests.
func (tx *ReadTx) Verify(limit int) []Problem {
	var out []Problem
	add := func(id uint64, f string, a ...any) bool {
		out = append(out, Problem{RowID: id, What: fmt.Sprintf(f, a...)})
		return limit > 0 && len(out) >= limit
	}
	type blk struct {
		first uint64
		v     []byte
	}
	var blocks []blk
	c := tx.blocks.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		v := getBlock(tx.blocks, k)
		first, ok := keyID(k)
		if !ok || first == 0 {
			if add(0, "malformed block key %x", k) {
				return out
			}
			continue
		}
		blocks = append(blocks, blk{first, v})
	}
	var recount counters
	var maxID, prevLast, nLive uint64
	var maxBatch int64
	unknownBytes := false
	for i, bl := range blocks {
		b := decodeBlock(bl.first, bl.v)
		if h, err := parseBlockHeader(bl.v); err == nil && h.first != bl.first {
			if add(bl.first, "block key %d, its header says row %d: the key is damaged", bl.first, h.first) {
				return out
			}
			continue
		}
		last := b.last()
		if h, err := parseBlockHeader(bl.v); err != nil {
			// Its extent is unknown: up to the next block, as findBlock
			// takes it.
			last = tx.nextRow - 1
			if i+1 < len(blocks) {
				last = blocks[i+1].first - 1
			}
		} else {
			maxBatch = max(maxBatch, h.firstBatch+int64(h.count)-1)
		}
		if bl.first <= prevLast {
			if add(bl.first, "block %d..%d overlaps the block before (up to %d)", bl.first, last, prevLast) {
				return out
			}
			continue
		}
		prevLast, maxID = last, max(maxID, last)
		if last-bl.first >= blockMaxRows+uint64(tx.nextRow) {
			if add(bl.first, "block %d..%d is longer than any block", bl.first, last) {
				return out
			}
			continue
		}
		_, lens, lensOK := blockPayloadLens(bl.v)
		if !lensOK {
			unknownBytes = true
		}
		live := 0
		var blockErr error
		for id := bl.first; id <= last; id++ {
			st, hasState := tx.stateOf(id, b.created)
			sending := tx.isSending(id)
			if !hasState && !sending && !tx.pendContains(id) {
				continue // deleted; the block still holds others
			}
			live++
			status := st.status
			if sending {
				// A SENDING row rests as PENDING: any other stored status
				// means the sending entry is stray.
				if st.status != StatusPending {
					if add(id, "in the sending index but stored as %s", st.status) {
						return out
					}
				}
				status = StatusSending
			}
			recount.add(status, 1)
			if lensOK {
				recount.payloadBytes += int64(lens[id-bl.first])
			}
			if b.err != nil && !(status == StatusDead && quarantinedReason(st.reason)) {
				blockErr = b.err
			}
			for _, p := range tx.indexProblems(id, status, &st, &recount) {
				if add(id, "%s", p) {
					return out
				}
			}
		}
		if blockErr != nil {
			if add(bl.first, "%v (rows %d..%d; those still in use are not DEAD for it yet)", blockErr, bl.first, last) {
				return out
			}
		}
		if live == 0 {
			if add(bl.first, "block %d..%d holds no row any more and was not deleted", bl.first, last) {
				return out
			}
		}
		nLive += uint64(live)
	}
	// Every index entry must point at a row of its status.
	var prevEnd uint64
	var runProblems []Problem
	tx.pendRuns(func(s, e uint64) bool {
		if e < s || (prevEnd != 0 && s <= prevEnd) {
			runProblems = append(runProblems, Problem{RowID: s, What: fmt.Sprintf("malformed or overlapping pending run %d..%d", s, e)})
			return true
		}
		prevEnd = e
		// A damaged run can span 2^64 ids: it is reported, not walked.
		if e-s >= nLive || e >= tx.nextRow {
			runProblems = append(runProblems, Problem{RowID: s, What: fmt.Sprintf("pending run %d..%d longer than the %d rows or beyond next_row_id %d", s, e, nLive, tx.nextRow)})
			return true
		}
		for id := s; id <= e; id++ {
			if st, ok := tx.statusAt(id); !ok || st != StatusPending {
				runProblems = append(runProblems, Problem{RowID: id, What: fmt.Sprintf("pending run entry, row is %s", st)})
			}
		}
		return true
	})
	prevEnd = 0
	tx.sendRuns(func(r sendRun, ok bool) bool {
		if !ok || (prevEnd != 0 && r.start <= prevEnd) {
			runProblems = append(runProblems, Problem{RowID: r.start, What: fmt.Sprintf("malformed or overlapping sending run %d..%d", r.start, r.end)})
			return true
		}
		prevEnd = r.end
		if r.end-r.start >= nLive || r.end >= tx.nextRow {
			runProblems = append(runProblems, Problem{RowID: r.start, What: fmt.Sprintf("sending run %d..%d longer than the %d rows or beyond next_row_id %d", r.start, r.end, nLive, tx.nextRow)})
			return true
		}
		for id := r.start; id <= r.end; id++ {
			if st, ok := tx.statusAt(id); !ok || st != StatusSending {
				runProblems = append(runProblems, Problem{RowID: id, What: fmt.Sprintf("sending run entry, row is %s", st)})
			}
		}
		return true
	})
	for _, p := range runProblems {
		if add(p.RowID, "%s", p.What) {
			return out
		}
	}
	checks := []struct {
		b      *bolt.Bucket
		status Status
		ts     bool
	}{{tx.delayed, StatusPending, false}, {tx.timers, StatusPending, true},
		{tx.acked, StatusAcked, true}, {tx.dead, StatusDead, false}, {tx.state, 0, false}}
	for _, ch := range checks {
		ic := ch.b.Cursor()
		for k, _ := ic.First(); k != nil; k, _ = ic.Next() {
			var id uint64
			var ok bool
			if ch.ts {
				_, id, ok = splitTSKey(k)
			} else {
				id, ok = keyID(k)
			}
			if !ok {
				if add(0, "malformed key %x in index", k) {
					return out
				}
				continue
			}
			s, ok := tx.statusAt(id)
			if ch.status == 0 { // state entries: of a row in some block
				if _, _, found := tx.findBlock(id); !found {
					if add(id, "state entry of a row no block holds") {
						return out
					}
				}
				continue
			}
			if !ok || s != ch.status {
				if add(id, "index entry for %s, row is %s", ch.status, s) {
					return out
				}
			}
		}
	}
	stored := tx.ctr
	stored.checksumFailures = 0
	if unknownBytes {
		// A block whose table does not parse: its payload bytes cannot
		// be recounted (its rows are reported above).
		stored.payloadBytes = recount.payloadBytes
	}
	if stored != recount {
		if add(0, "counters %+v differ from a recount %+v", stored, recount) {
			return out
		}
	}
	if maxID >= tx.nextRow {
		if add(0, "next_row_id %d not above the highest row id %d", tx.nextRow, maxID) {
			return out
		}
	}
	if maxBatch >= tx.nextBatch {
		add(0, "next_batch_id %d not above the highest batch id %d", tx.nextBatch, maxBatch)
	}
	return out
}

// statusAt is the status of row id as the indexes and its state entry
// say, without decoding its block; ok=false when no block holds it or it
// is in no index.
func (tx *ReadTx) statusAt(id uint64) (Status, bool) {
	if _, _, ok := tx.findBlock(id); !ok {
		return 0, false
	}
	if tx.isSending(id) {
		return StatusSending, true
	}
	if st, ok := decodeState(tx.state.Get(u64key(id))); ok {
		return st.status, true
	}
	if tx.pendContains(id) {
		return StatusPending, true
	}
	return 0, false
}

// indexProblems checks that row id of status s is in the index of its
// status and no other.
func (tx *ReadTx) indexProblems(id uint64, s Status, st *rowState, recount *counters) []string {
	k := u64key(id)
	in := map[string]bool{
		"pending": tx.pendContains(id),
		"delayed": tx.delayed.Get(k) != nil,
		"sending": tx.isSending(id),
		"acked":   s == StatusAcked && tx.acked.Get(tsKey(st.updated, id)) != nil,
		"dead":    tx.dead.Get(k) != nil,
	}
	want := map[Status][]string{StatusPending: {"pending", "delayed"}, StatusSending: {"sending"},
		StatusAcked: {"acked"}, StatusDead: {"dead"}}[s]
	var probs []string
	n := 0
	for _, name := range want {
		if in[name] {
			n++
		}
	}
	if n != 1 {
		probs = append(probs, fmt.Sprintf("%s row in %d of its indexes %v", s, n, want))
	}
	for name, ok := range in {
		if ok && !contains(want, name) {
			probs = append(probs, fmt.Sprintf("%s row also in index %s", s, name))
		}
	}
	if in["delayed"] {
		recount.delayed++
		nb := tx.delayed.Get(k)
		if len(nb) != 8 || int64(binary.BigEndian.Uint64(nb)) != st.notBefore {
			probs = append(probs, "delayed entry disagrees with NotBefore")
		} else if tx.timers.Get(tsKey(st.notBefore, id)) == nil {
			probs = append(probs, "delayed row without timer")
		}
	}
	return probs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
