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
// checksum go back to DEAD at their next claim.
func (tx *Tx) RetryDead(now int64) (int, error) {
	n := 0
	for _, k := range firstKeys(tx.dead, int(^uint(0)>>1)) {
		id, ok := keyID(k)
		if !ok {
			continue
		}
		v := tx.rows.Get(k)
		r, crc, err := decodeRow(id, v)
		if err != nil || r.Status != StatusDead {
			tx.w.log.Warn("wal: dead index entry without a DEAD row", "row_id", id)
			continue
		}
		if err := tx.dead.Delete(k); err != nil {
			return n, fmt.Errorf("wal %s: retry dead row %d: %w", tx.w.path, id, err)
		}
		tx.ctr.dead--
		r.Attempts, r.NotBefore, r.Reason, r.UpdatedAt = 0, 0, "", now
		if err := tx.putPending(&r, crc, now); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// PurgeDead deletes every DEAD row and returns how many.
func (tx *Tx) PurgeDead() (int, error) {
	n := 0
	for _, k := range firstKeys(tx.dead, int(^uint(0)>>1)) {
		if err := tx.dead.Delete(k); err != nil {
			return n, fmt.Errorf("wal %s: purge dead: %w", tx.w.path, err)
		}
		tx.dirty = true
		v := tx.rows.Get(k)
		if s, ok := rowStatus(v); !ok || s != StatusDead {
			if v != nil && !ok {
				// A quarantined row is always decodable; anything else is
				// left for `db verify` to report.
				tx.w.log.Warn("wal: dead index entry for an undecodable row", "key", fmt.Sprintf("%x", k))
			}
			continue
		}
		tx.ctr.payloadBytes -= int64(payloadLen(v))
		if err := tx.rows.Delete(k); err != nil {
			return n, fmt.Errorf("wal %s: purge dead: %w", tx.w.path, err)
		}
		tx.ctr.dead--
		n++
	}
	return n, nil
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

// Verify checks every row's checksum, that every row sits in exactly the
// index of its status and every index entry points at such a row, that the
// counters match a recount and the id allocators are ahead of the rows, and
// walks every page as bbolt's own consistency check does (without its
// panics: verifyraw.go). On a damaged B-tree it reports the damage and
// the rows it could read, and skips the index and counter checks. It
// returns at most limit problems (all when limit <= 0). Rows already DEAD for a bad checksum are not
// problems: they were handled. O(rows); for operators and tests.
func (tx *ReadTx) Verify(limit int) []Problem {
	var out []Problem
	add := func(id uint64, f string, a ...any) bool {
		out = append(out, Problem{RowID: id, What: fmt.Sprintf(f, a...)})
		return limit > 0 && len(out) >= limit
	}
	damage, rawRows, err := rawCheck(tx.w.path, nil, tx.btx, limit)
	if err != nil {
		add(0, "check pages: %v", err)
		return out
	}
	if len(damage) > 0 {
		return clip(damageProblems(tx.w.path, damage, rawRows), limit)
	}
	var recount counters
	var maxID, nRows uint64
	var maxBatch int64
	c := tx.rows.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		nRows++
		id, ok := keyID(k)
		if !ok {
			if add(0, "malformed row key %x", k) {
				return out
			}
			continue
		}
		maxID = id
		r, crc, err := decodeRow(id, v)
		if err != nil {
			if add(id, "%v", err) {
				return out
			}
			continue
		}
		stored := r.Status
		tx.resolve(&r)
		// A SENDING row rests as PENDING: any other stored status means
		// the sending entry is stray.
		if r.Status == StatusSending && stored != StatusPending {
			if add(id, "in the sending index but stored as %s", stored) {
				return out
			}
		}
		maxBatch = max(maxBatch, r.BatchID)
		recount.add(r.Status, 1)
		recount.payloadBytes += int64(len(r.Payload))
		if payloadCRC(r.Payload) != crc && !quarantined(&r) {
			if add(id, "payload checksum mismatch (status %s)", r.Status) {
				return out
			}
		}
		for _, p := range tx.indexProblems(&r, &recount) {
			if add(id, "%s", p) {
				return out
			}
		}
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
		if e-s >= nRows || e >= tx.nextRow {
			runProblems = append(runProblems, Problem{RowID: s, What: fmt.Sprintf("pending run %d..%d longer than the %d rows or beyond next_row_id %d", s, e, nRows, tx.nextRow)})
			return true
		}
		for id := s; id <= e; id++ {
			k := u64key(id)
			if st, ok := tx.statusOf(k, tx.rows.Get(k)); !ok || st != StatusPending {
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
		if r.end-r.start >= nRows || r.end >= tx.nextRow {
			runProblems = append(runProblems, Problem{RowID: r.start, What: fmt.Sprintf("sending run %d..%d longer than the %d rows or beyond next_row_id %d", r.start, r.end, nRows, tx.nextRow)})
			return true
		}
		for id := r.start; id <= r.end; id++ {
			k := u64key(id)
			if st, ok := tx.statusOf(k, tx.rows.Get(k)); !ok || st != StatusSending {
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
		{tx.acked, StatusAcked, true}, {tx.dead, StatusDead, false}}
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
			rk := u64key(id)
			if s, ok := tx.statusOf(rk, tx.rows.Get(rk)); !ok || s != ch.status {
				if add(id, "index entry for %s, row is %s", ch.status, s) {
					return out
				}
			}
		}
	}
	stored := tx.ctr
	stored.checksumFailures = 0
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

// indexProblems checks that r is in the index of its status and no other.
func (tx *ReadTx) indexProblems(r *Row, recount *counters) []string {
	k := u64key(r.ID)
	in := map[string]bool{
		"pending": tx.pendContains(r.ID),
		"delayed": tx.delayed.Get(k) != nil,
		"sending": tx.isSending(r.ID),
		"acked":   r.Status == StatusAcked && tx.acked.Get(tsKey(r.UpdatedAt, r.ID)) != nil,
		"dead":    tx.dead.Get(k) != nil,
	}
	want := map[Status][]string{StatusPending: {"pending", "delayed"}, StatusSending: {"sending"},
		StatusAcked: {"acked"}, StatusDead: {"dead"}}[r.Status]
	var probs []string
	n := 0
	for _, name := range want {
		if in[name] {
			n++
		}
	}
	if n != 1 {
		probs = append(probs, fmt.Sprintf("%s row in %d of its indexes %v", r.Status, n, want))
	}
	for name, ok := range in {
		if ok && !contains(want, name) {
			probs = append(probs, fmt.Sprintf("%s row also in index %s", r.Status, name))
		}
	}
	if in["delayed"] {
		recount.delayed++
		nb := tx.delayed.Get(k)
		if len(nb) != 8 || int64(binary.BigEndian.Uint64(nb)) != r.NotBefore {
			probs = append(probs, "delayed entry disagrees with NotBefore")
		} else if tx.timers.Get(tsKey(r.NotBefore, r.ID)) == nil {
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
