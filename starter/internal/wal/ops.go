package wal

import (
	"bytes"
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

// PurgeDead deletes every DEAD row and returns how many. With GapFree a
// row that went DEAD without a stand-in gets one (standin.go).
func (tx *Tx) PurgeDead() (int, error) {
	n, err := tx.purgeDead()
	if err != nil {
		return n, err
	}
	return n, tx.flushGaps()
}

func (tx *Tx) purgeDead() (int, error) {
	n := 0
	var f blockFreer
	for _, k := range firstKeys(tx.dead, int(^uint(0)>>1)) {
		hasStandIn := bytes.Equal(tx.dead.Get(k), deadHasStandIn)
		if err := tx.dead.Delete(k); err != nil {
			return n, fmt.Errorf("wal %s: purge dead: %w", tx.w.path, err)
		}
		tx.dirty = true
		id, ok := keyID(k)
		if !ok {
			continue
		}
		if !hasStandIn && tx.isDead(id) {
			tx.noteGap(id, GapPurged)
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

// isDead reports whether row id's state entry says DEAD.
func (tx *ReadTx) isDead(id uint64) bool {
	st, ok := decodeState(tx.state.Get(u64key(id)))
	return ok && st.status == StatusDead
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
	v := &verifier{tx: tx, limit: limit}
	for _, step := range []func() bool{v.blocks, v.runs, v.indexes, v.totals, v.positions} {
		if step() {
			break
		}
	}
	return v.out
}

// verifier is one Verify: the problems found so far and what the walk
// of the blocks counted, for the checks after it.
type verifier struct {
	tx    *ReadTx
	limit int
	out   []Problem

	recount      counters
	maxID, nLive uint64
	maxBatch     int64
	unknownBytes bool // a block's payload table did not parse
}

// add records a problem and reports whether the limit is reached.
func (v *verifier) add(id uint64, f string, a ...any) bool {
	v.out = append(v.out, Problem{RowID: id, What: fmt.Sprintf(f, a...)})
	return v.limit > 0 && len(v.out) >= v.limit
}

type verifyBlock struct {
	first uint64
	v     []byte
}

// blocks walks every block and the rows it holds; it reports true when
// the limit is reached.
func (v *verifier) blocks() bool {
	var blocks []verifyBlock
	c := v.tx.blocks.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		first, ok := keyID(k)
		if !ok || first == 0 {
			if v.add(0, "malformed block key %x", k) {
				return true
			}
			continue
		}
		blocks = append(blocks, verifyBlock{first, getBlock(v.tx.blocks, k)})
	}
	var prevLast uint64
	for i, bl := range blocks {
		next := v.tx.nextRow
		if i+1 < len(blocks) {
			next = blocks[i+1].first
		}
		last, ok, stop := v.blockExtent(bl, next, prevLast)
		if stop {
			return true
		}
		if !ok {
			continue
		}
		prevLast, v.maxID = last, max(v.maxID, last)
		if last-bl.first >= blockMaxRows+uint64(v.tx.nextRow) {
			if v.add(bl.first, "block %d..%d is longer than any block", bl.first, last) {
				return true
			}
			continue
		}
		if v.blockRows(bl, last) {
			return true
		}
	}
	return false
}

// blockExtent is the last row of block bl (next is the first row of the
// block after it), ok=false when the block is reported and skipped.
func (v *verifier) blockExtent(bl verifyBlock, next, prevLast uint64) (last uint64, ok, stop bool) {
	h, err := parseBlockHeader(bl.v)
	if err == nil && h.first != bl.first {
		return 0, false, v.add(bl.first, "block key %d, its header says row %d: the key is damaged", bl.first, h.first)
	}
	if err != nil {
		// Its extent is unknown: up to the next block, as findBlock
		// takes it.
		last = next - 1
	} else {
		last = decodeBlock(bl.first, bl.v, v.tx.w.keyring()).last()
		v.maxBatch = max(v.maxBatch, h.firstBatch+int64(h.count)-1)
	}
	if bl.first <= prevLast {
		return 0, false, v.add(bl.first, "block %d..%d overlaps the block before (up to %d)", bl.first, last, prevLast)
	}
	return last, true, false
}

// blockRows checks the rows of block bl up to last against the indexes
// and counts them.
func (v *verifier) blockRows(bl verifyBlock, last uint64) bool {
	tx := v.tx
	b := decodeBlock(bl.first, bl.v, tx.w.keyring())
	_, lens, lensOK := blockPayloadLens(bl.v)
	if !lensOK {
		v.unknownBytes = true
	}
	live := 0
	var blockErr error
	for id := bl.first; id <= last; id++ {
		st, hasState := tx.stateOf(id, b.created)
		sending := tx.isSending(id)
		recv, received := tx.recv.find(id)
		if !hasState && !sending && !received && !tx.pend.contains(id) {
			continue // deleted; the block still holds others
		}
		live++
		status := st.status
		if sending {
			// A SENDING row rests as PENDING: any other stored status
			// means the sending entry is stray.
			if st.status != StatusPending {
				if v.add(id, "in the sending index but stored as %s", st.status) {
					return true
				}
			}
			status = StatusSending
		} else if received {
			// The same for RECEIVED, whose run also says its batch id.
			if st.status != StatusPending {
				if v.add(id, "in the received index but stored as %s", st.status) {
					return true
				}
			}
			want, from := b.batchID(id), "its block"
			if tx.claimsIDs() {
				want, _ = tx.claimedBatch(id, nil)
				from = "its claim"
			}
			if b.err == nil && recv.batchOf(id) != want {
				if v.add(id, "received run says batch id %d, %s %d", recv.batchOf(id), from, want) {
					return true
				}
			}
			status = StatusReceived
		}
		v.recount.add(status, 1)
		if lensOK {
			v.recount.payloadBytes += int64(lens[id-bl.first])
		}
		if b.err != nil && !(status == StatusDead && quarantinedReason(st.reason)) {
			blockErr = b.err
		}
		for _, p := range tx.indexProblems(id, status, &st, &v.recount) {
			if v.add(id, "%s", p) {
				return true
			}
		}
	}
	if blockErr != nil {
		if v.add(bl.first, "%v (rows %d..%d; those still in use are not DEAD for it yet)", blockErr, bl.first, last) {
			return true
		}
	}
	if live == 0 {
		if v.add(bl.first, "block %d..%d holds no row any more and was not deleted", bl.first, last) {
			return true
		}
	}
	v.nLive += uint64(live)
	return false
}

// runs checks that every pending, sending and received run entry points
// at a row of its status.
func (v *verifier) runs() bool {
	tx := v.tx
	var problems []Problem
	checkRun := func(kind string, s, e uint64, prevEnd *uint64, want Status, ok bool) {
		if !ok || e < s || (*prevEnd != 0 && s <= *prevEnd) {
			problems = append(problems, Problem{RowID: s, What: fmt.Sprintf("malformed or overlapping %s run %d..%d", kind, s, e)})
			return
		}
		*prevEnd = e
		// A damaged run can span 2^64 ids: it is reported, not walked.
		if e-s >= v.nLive || e >= tx.nextRow {
			problems = append(problems, Problem{RowID: s, What: fmt.Sprintf("%s run %d..%d longer than the %d rows or beyond next_row_id %d", kind, s, e, v.nLive, tx.nextRow)})
			return
		}
		for id := s; id <= e; id++ {
			if st, ok := tx.statusAt(id); !ok || st != want {
				problems = append(problems, Problem{RowID: id, What: fmt.Sprintf("%s run entry, row is %s", kind, st)})
			}
		}
	}
	type checked struct {
		in   index
		want Status
	}
	runIndexes := []checked{{tx.send, StatusSending}, {tx.recv, StatusReceived}}
	for _, x := range tx.pend.all() {
		runIndexes = append(runIndexes, checked{x, StatusPending})
	}
	for _, x := range runIndexes {
		var prevEnd uint64
		x.in.each(func(r run, ok bool) bool {
			checkRun(x.in.kind.name, r.start, r.end, &prevEnd, x.want, ok)
			return true
		})
	}
	for _, p := range problems {
		if v.add(p.RowID, "%s", p.What) {
			return true
		}
	}
	return false
}

// indexes checks that every entry of the other indexes points at a row of
// its status, and every state entry at a row some block holds.
func (v *verifier) indexes() bool {
	tx := v.tx
	checks := []struct {
		b      *bolt.Bucket
		status Status
		ts     bool
	}{{tx.delayed, StatusPending, false}, {tx.timers, StatusPending, true},
		{tx.acked, StatusAcked, true}, {tx.dead, StatusDead, false}, {tx.state, 0, false}}
	for _, ch := range checks {
		ic := ch.b.Cursor()
		for k, val := ic.First(); k != nil; k, val = ic.Next() {
			if ch.status == StatusDead && len(val) != 0 && !bytes.Equal(val, deadHasStandIn) {
				if v.add(0, "dead index value %x for key %x is neither empty nor the stand-in mark", val, k) {
					return true
				}
			}
			var id uint64
			var ok bool
			if ch.ts {
				_, id, ok = splitTSKey(k)
			} else {
				id, ok = keyID(k)
			}
			if !ok {
				if v.add(0, "malformed key %x in index", k) {
					return true
				}
				continue
			}
			s, ok := tx.statusAt(id)
			if ch.status == 0 { // state entries: of a row in some block
				if _, _, found := tx.findBlock(id); !found {
					if v.add(id, "state entry of a row no block holds") {
						return true
					}
				}
				continue
			}
			if !ok || s != ch.status {
				if v.add(id, "index entry for %s, row is %s", ch.status, s) {
					return true
				}
			}
		}
	}
	return false
}

// totals checks the stored counters against the recount and the id
// allocators against the highest ids seen.
func (v *verifier) totals() bool {
	tx := v.tx
	stored := tx.ctr
	stored.checksumFailures, stored.standIns = 0, 0
	if v.unknownBytes {
		// A block whose table does not parse: its payload bytes cannot
		// be recounted (its rows are reported above).
		stored.payloadBytes = v.recount.payloadBytes
	}
	if stored != v.recount {
		if v.add(0, "counters %+v differ from a recount %+v", stored, v.recount) {
			return true
		}
	}
	if v.maxID >= tx.nextRow {
		if v.add(0, "next_row_id %d not above the highest row id %d", tx.nextRow, v.maxID) {
			return true
		}
	}
	if v.maxBatch >= tx.nextBatch {
		return v.add(0, "next_batch_id %d not above the highest batch id %d", tx.nextBatch, v.maxBatch)
	}
	return false
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
	if tx.isReceived(id) {
		return StatusReceived, true
	}
	if st, ok := decodeState(tx.state.Get(u64key(id))); ok {
		return st.status, true
	}
	if tx.pend.contains(id) {
		return StatusPending, true
	}
	return 0, false
}

// indexProblems checks that row id of status s is in the index of its
// status and no other.
func (tx *ReadTx) indexProblems(id uint64, s Status, st *rowState, recount *counters) []string {
	k := u64key(id)
	in := map[string]bool{
		"pending":  tx.pend.contains(id),
		"delayed":  tx.delayed.Get(k) != nil,
		"sending":  tx.isSending(id),
		"received": tx.isReceived(id),
		"acked":    s == StatusAcked && tx.acked.Get(tsKey(st.updated, id)) != nil,
		"dead":     tx.dead.Get(k) != nil,
	}
	want := map[Status][]string{StatusPending: {"pending", "delayed"}, StatusSending: {"sending"},
		StatusReceived: {"received"}, StatusAcked: {"acked"}, StatusDead: {"dead"}}[s]
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
