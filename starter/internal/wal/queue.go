package wal

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ReasonChecksum is the Reason of a row Claim moved to DEAD because its
// block no longer matches the stored CRC32C.
const ReasonChecksum = "checksum mismatch"

// reasonUndecodable prefixes the Reason of a row whose stored block could
// not be decoded at all.
const reasonUndecodable = "undecodable row: "

// Append stores rows as PENDING with consecutive row ids first..last and
// batch ids taken from next_batch_id, as one block (several when bigger
// than blockMaxRaw). It returns 0, 0 for no rows.
//
// Rows of a named lane (NewRow.Lane) go into blocks of their own, a run of
// consecutive rows of one lane at a time; their ids stay consecutive in
// the order given.
func (tx *Tx) Append(rows []NewRow) (first, last uint64, err error) {
	if len(rows) == 0 {
		return 0, 0, nil
	}
	// Validate first so that a bad row leaves the transaction untouched.
	laned := false
	for i := range rows {
		if rows[i].Lane != "" {
			if _, ok := tx.pend.lane(rows[i].Lane); !ok {
				return 0, 0, fmt.Errorf("wal %s: append row %d: lane %q is not one of the lanes it was opened with", tx.w.path, i, rows[i].Lane)
			}
			laned = true
		}
		if len(rows[i].SourceID) > maxRowString {
			return 0, 0, fmt.Errorf("wal %s: append row %d: source id longer than %d bytes", tx.w.path, i, maxRowString)
		}
		if len(rows[i].Payload) > maxPayload {
			return 0, 0, fmt.Errorf("wal %s: append row %d: payload of %d bytes exceeds %d", tx.w.path, i, len(rows[i].Payload), maxPayload)
		}
	}
	if !laned {
		return tx.appendLane(rows, "")
	}
	first = tx.nextRow
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j].Lane == rows[i].Lane {
			j++
		}
		if _, last, err = tx.appendLane(rows[i:j], rows[i].Lane); err != nil {
			return 0, 0, err
		}
		i = j
	}
	return first, last, nil
}

// appendLane is Append of rows of lane lane.
func (tx *Tx) appendLane(rows []NewRow, lane string) (first, last uint64, err error) {
	now := tx.w.now().UnixMilli()
	first = tx.nextRow
	// Encoded before the room check: it is the stored (compressed) size
	// that needs pages.
	groups := splitBlocks(rows)
	vals := make([][]byte, len(groups))
	blocks := make([]*block, len(groups))
	size := 0
	id := tx.nextRow
	batch := tx.appendBatch(len(rows))
	ahead := tx.ctr.pending - tx.ctr.delayed // the rows claims take first
	for i, group := range groups {
		vals[i], blocks[i] = tx.w.enc.encode(id, batch, now, group, keepDecoded(ahead, group, tx.w.cache.limit()))
		size += len(vals[i])
		id += uint64(len(group))
		if !tx.claimsIDs() {
			batch += int64(len(group))
		}
		ahead += int64(len(group))
	}
	if err := tx.roomFor(size); err != nil {
		return 0, 0, err
	}
	var bytesAdded int64
	for i, group := range groups {
		if err := putBlock(tx.blocks, u64key(tx.nextRow), vals[i]); err != nil {
			return 0, 0, fmt.Errorf("wal %s: append rows %d..: %w", tx.w.path, tx.nextRow, err)
		}
		if err := tx.setBlockLane(tx.nextRow, lane); err != nil {
			return 0, 0, err
		}
		for i := range group {
			bytesAdded += int64(len(group[i].Payload))
		}
		tx.nextRow += uint64(len(group))
		// The claim that follows finds the rows decoded. A rollback
		// clears the cache (WAL.Update): these ids are handed out again.
		if blocks[i] != nil {
			tx.cache.put(blocks[i])
		}
	}
	if err := tx.pend.add(run{start: first, end: tx.nextRow - 1}); err != nil {
		return 0, 0, err
	}
	tx.ctr.pending += int64(len(rows))
	tx.ctr.payloadBytes += bytesAdded
	tx.dirty = true
	return first, tx.nextRow - 1, nil
}

// keepDecoded says whether an append keeps the decoded block of group
// in the cache (of limit bytes) for its claim, with ahead rows due
// before it. Behind more
// payload than the cache holds it would not be there any more: the
// claims of the rows ahead put their own blocks in first, and the copy
// of the payloads a kept block owns was made for nothing. That is the
// usual case of a loaded agent, whose input reads far ahead of the
// engine.
func keepDecoded(ahead int64, group []NewRow, limit int) bool {
	if ahead <= 0 {
		return true
	}
	n := 0
	for i := range group {
		n += len(group[i].Payload)
	}
	return ahead*int64(n/len(group)) < int64(limit)
}

// findBlock returns the key and value of the block that holds id. A
// block whose header does not parse is taken to hold every id up to the
// next block: its rows are then found, and go DEAD at their claim,
// instead of being lost.
func (tx *ReadTx) findBlock(id uint64) (uint64, []byte, bool) {
	c := tx.blocks.Cursor()
	k, _ := c.Seek(u64key(id))
	if k == nil {
		k, _ = cursorLast(c)
	} else if got, _ := keyID(k); got != id {
		k, _ = c.Prev()
	}
	first, ok := keyID(k)
	if !ok || first > id {
		return 0, nil, false
	}
	v := getBlock(tx.blocks, k)
	if h, err := parseBlockHeader(v); err == nil && id > h.last() {
		return 0, nil, false
	}
	return first, v, true
}

// blockOf returns the decoded block holding id, nil when there is none.
// Write transactions keep decoded blocks in the WAL's cache.
func (tx *ReadTx) blockOf(id uint64) *block {
	if tx.cache != nil {
		if b := tx.cache.get(id); b != nil {
			return b
		}
	}
	first, v, ok := tx.findBlock(id)
	if !ok {
		return nil
	}
	tx.readBytes += int64(len(v))
	b := decodeBlock(first, v, tx.w.keyring())
	if b.err == nil && !b.has(id) {
		return nil
	}
	if tx.cache != nil {
		tx.cache.put(b)
	}
	return b
}

// rowOf assembles row id of block b (b.err == nil) with state st; the
// payload aliases the block's buffer, which is never written again.
func rowOf(b *block, id uint64, st *rowState) Row {
	return Row{ID: id, BatchID: b.batchID(id), SourceID: b.source(id), Payload: b.payload(id),
		Status: st.status, Attempts: st.attempts, CreatedAt: b.created, UpdatedAt: st.updated,
		NotBefore: st.notBefore, Reason: st.reason, StandIn: b.standIn}
}

// Claim moves up to limit of the oldest PENDING rows whose NotBefore <= now to
// SENDING and returns them. It does not charge an attempt: only
// Fail(charge=true) does, for sends that reached the engine. A row whose
// block fails its checksum or does not decode goes to DEAD with Reason
// ReasonChecksum (or naming the decoding error), is counted in
// Counts.ChecksumFailures and is skipped. Cost is O(rows touched): due
// delayed rows are promoted through the time-ordered timers index, never
// by scanning all PENDING rows. Nothing is written about the rows
// themselves: the claimed ids go into the sending index as runs
// (sending.go), one write per run of consecutive ids, and each block is
// decoded once for all its rows (blockCache).
func (tx *Tx) Claim(limit int, now int64) ([]Row, error) {
	if limit <= 0 {
		return nil, nil
	}
	// Sized for the rows there can be: growing a slice of Rows row by row
	// was a third of the bytes a loaded agent allocates.
	out := make([]Row, 0, max(0, min(int64(limit), tx.ctr.pending)))
	_, _, err := tx.ClaimFunc(limit, 0, now, func(r *Row) { out = append(out, *r) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClaimFunc is Claim handing each claimed row to fn instead of returning
// a slice of them: a caller that keeps only some fields of a row (the
// agent) does not pay for a Row per row claimed, 112 bytes allocated
// and dropped per row at a claim of thousands. *r is only valid during
// the call; r.Payload stays valid (see Row). It returns how many rows
// it claimed, and bounded: whether it stopped at limit or maxBytes
// rather than for want of due rows, so that more may be due. On an
// error fn may have seen rows that the transaction then rolls back.
//
// maxBytes, when above zero, also bounds the payload bytes claimed: the
// claim stops before the row that would take them past it, except that
// the first row is always claimed (a row bigger than the bound must
// still be sent). Payload sizes come from the blocks, decoded once and
// cached for the claim itself.
//
// With Options.Lanes it takes from the named lanes in their order, then
// from the default lane.
func (tx *Tx) ClaimFunc(limit, maxBytes int, now int64, fn func(r *Row)) (claimed int, bounded bool, err error) {
	if tx.claimsIDs() {
		return tx.claimAfterRetries(limit, maxBytes, now, fn, func(limit, maxBytes int) (int, bool, error) {
			return tx.claimPlain(limit, maxBytes, now, fn)
		})
	}
	claimed, bounded, err = tx.claimPlain(limit, maxBytes, now, fn)
	if err != nil {
		return claimed, false, err
	}
	// Stand-ins for the rows quarantined, not claimed by this call.
	return claimed, bounded, tx.flushGaps()
}

// claimPlain is ClaimFunc without claimRetries and flushGaps.
func (tx *Tx) claimPlain(limit, maxBytes int, now int64, fn func(r *Row)) (claimed int, bounded bool, err error) {
	if len(tx.pend.others) == 0 {
		return tx.claimFunc(pendSource{x: tx.pend.index}, limit, maxBytes, now, fn)
	}
	return tx.claimLanes(limit, maxBytes, now, fn)
}

// claimAfterRetries claims the due rows of claim_retry (claimids.go),
// then, within what is left of limit and maxBytes, as claim says, then
// appends the stand-ins of rows quarantined.
func (tx *Tx) claimAfterRetries(limit, maxBytes int, now int64, fn func(r *Row), claim func(limit, maxBytes int) (int, bool, error)) (claimed int, bounded bool, err error) {
	claimed, used, bounded, err := tx.claimRetries(limit, maxBytes, now, fn)
	if err == nil && !bounded {
		left := 0
		if maxBytes > 0 {
			left = maxBytes - used
		}
		var n int
		n, bounded, err = claim(limit-claimed, left)
		claimed += n
	}
	if err != nil {
		return claimed, false, err
	}
	// Stand-ins for the rows quarantined, not claimed by this call.
	return claimed, bounded, tx.flushGaps()
}

func (tx *Tx) claimFunc(src pendSource, limit, maxBytes int, now int64, fn func(r *Row)) (claimed int, bounded bool, err error) {
	if limit <= 0 {
		return 0, false, nil
	}
	if err := tx.promote(now); err != nil {
		return 0, false, err
	}
	var cur run // the run being built; end == 0: none
	// given is the run of batch ids given by this claim being built
	// (claimids.go); end == 0: none.
	var given run
	flushRun := func() error {
		if given.end != 0 {
			if err := tx.ids.add(given); err != nil {
				return err
			}
			given = run{}
		}
		if cur.end == 0 {
			return nil
		}
		err := tx.send.put(cur)
		cur = run{}
		return err
	}
	ss := stateScan{c: tx.state.Cursor()}
	var b *block
	var r Row
	bytes := 0
	for claimed < limit {
		n := limit - claimed
		if maxBytes > 0 {
			var more bool
			if n, more = tx.pendFitting(src, n, maxBytes-bytes, claimed == 0); n == 0 {
				return claimed, more, flushRun()
			}
		}
		ids, err := tx.pendTake(src, n)
		if err != nil {
			return claimed, false, err
		}
		if len(ids) == 0 {
			return claimed, false, flushRun()
		}
		tx.dirty = true
		for _, id := range ids {
			if b == nil || b.err != nil || !b.has(id) {
				b = tx.blockOf(id)
			}
			if b == nil {
				tx.ctr.pending--
				tx.w.log.Warn("wal: pending index entry without row", "row_id", id)
				continue
			}
			st := rowState{status: StatusPending, updated: b.created}
			if v, ok := ss.get(id); ok {
				if s, ok := decodeState(v); ok {
					st = s
				}
			}
			if st.status != StatusPending {
				tx.w.log.Warn("wal: pending index entry for row in another state", "row_id", id, "status", st.status.String())
				continue
			}
			tx.ctr.pending--
			if b.err != nil {
				if err := tx.quarantine(id, b, &st, now); err != nil {
					return claimed, false, err
				}
				ss.reset()
				continue
			}
			if cur.end != 0 && id == cur.end+1 {
				cur.end = id
			} else {
				if err := flushRun(); err != nil {
					return claimed, false, err
				}
				cur = run{start: id, end: id, at: now}
			}
			tx.ctr.sending++
			r = rowOf(b, id, &st)
			r.Status, r.UpdatedAt = StatusSending, now
			switch {
			case src.reuse > 0:
				r.BatchID = src.reuse
			case tx.claimsIDs():
				r.BatchID = tx.nextBatch
				tx.nextBatch++
				if given.end != 0 && id == given.end+1 && r.BatchID == given.batchOf(id) {
					given.end = id
				} else {
					if given.end != 0 {
						if err := tx.ids.add(given); err != nil {
							return claimed, false, err
						}
					}
					given = run{start: id, end: id, batch: r.BatchID}
				}
			case tx.w.opts.SendOrderBatchIDs:
				r.BatchID = tx.nextBatch
				tx.nextBatch++
			}
			fn(&r)
			claimed++
			bytes += len(r.Payload)
			if id == b.last() && tx.cache != nil {
				// Claims go in id order: no claim needs this block again
				// unless a row of it comes back PENDING, which decodes it
				// anew. Kept, it would only hold its payloads after the
				// jobs that took them are done.
				tx.cache.drop(b.first)
			}
		}
	}
	return claimed, true, flushRun()
}

// quarantine moves a row of a block that fails its checksum or does not
// decode to DEAD, with a reason saying which. A `db wal-retry-dead` sends
// it back to DEAD at its next claim: the block stays as it is.
func (tx *Tx) quarantine(id uint64, b *block, st *rowState, now int64) error {
	reason := ReasonChecksum
	if !isChecksum(b.err) {
		reason = reasonUndecodable + b.err.Error()
	}
	tx.warnOnCommit("wal: row's block failed its check, row moved to DEAD", "row_id", id, "error", b.err)
	tx.ctr.checksumFailures++
	st.status, st.reason, st.updated = StatusDead, reason, now
	return tx.putDead(id, st, tx.noteGap(id, GapDeadPrefix+reason))
}

// putDead writes the state of DEAD row id and its dead index entry,
// marked when the row got a stand-in.
func (tx *Tx) putDead(id uint64, st *rowState, standIn bool) error {
	if err := tx.putIndexed(id, st, tx.dead, u64key(id)); err != nil {
		return err
	}
	if standIn {
		if err := tx.dead.Put(u64key(id), deadHasStandIn); err != nil {
			return fmt.Errorf("wal %s: index row %d: %w", tx.w.path, id, err)
		}
	}
	return nil
}

// putIndexed writes the state of id and adds it to index under key ik,
// counting it in its status.
func (tx *Tx) putIndexed(id uint64, st *rowState, index *bolt.Bucket, ik []byte) error {
	if err := tx.putState(id, st); err != nil {
		return err
	}
	if err := index.Put(ik, empty); err != nil {
		return fmt.Errorf("wal %s: index row %d: %w", tx.w.path, id, err)
	}
	tx.ctr.add(st.status, 1)
	return nil
}

// putPending writes a PENDING row's state into the due or the delayed
// index.
func (tx *Tx) putPending(id uint64, st *rowState, now int64) error {
	if err := tx.listRetry(id); err != nil {
		return err
	}
	st.status = StatusPending
	if st.notBefore <= now {
		if err := tx.pend.add(run{start: id, end: id}); err != nil {
			return err
		}
		if err := tx.putState(id, st); err != nil {
			return err
		}
		tx.ctr.add(StatusPending, 1)
		return nil
	}
	if err := tx.delayed.Put(u64key(id), u64key(uint64(st.notBefore))); err != nil {
		return fmt.Errorf("wal %s: delay row %d: %w", tx.w.path, id, err)
	}
	tx.ctr.delayed++
	return tx.putIndexed(id, st, tx.timers, tsKey(st.notBefore, id))
}

// promote moves delayed rows that are due into the pending index.
func (tx *Tx) promote(now int64) error {
	c := tx.timers.Cursor()
	var due [][]byte
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		nb, _, ok := splitTSKey(k)
		if ok && nb > now {
			break
		}
		due = append(due, bytes.Clone(k))
	}
	for _, k := range due {
		if err := tx.timers.Delete(k); err != nil {
			return fmt.Errorf("wal %s: promote: %w", tx.w.path, err)
		}
		_, id, ok := splitTSKey(k)
		if !ok {
			continue
		}
		ik := u64key(id)
		if tx.delayed.Get(ik) == nil {
			continue
		}
		if err := tx.delayed.Delete(ik); err != nil {
			return fmt.Errorf("wal %s: promote: %w", tx.w.path, err)
		}
		tx.ctr.delayed--
		if err := tx.pend.add(run{start: id, end: id}); err != nil {
			return err
		}
		tx.dirty = true
	}
	return nil
}

// firstKeys copies up to n keys from the start of b.
func firstKeys(b *bolt.Bucket, n int) [][]byte {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && len(keys) < n; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	return keys
}

// loadSending returns the state of row id for a transition out of
// SENDING; ok=false (logged) when the row does not exist, and then it
// stays SENDING.
func (tx *Tx) loadSending(op string, id uint64) (rowState, bool) {
	_, v, ok := tx.findBlock(id)
	if !ok {
		tx.w.log.Warn("wal: unknown row id", "op", op, "row_id", id)
		return rowState{}, false
	}
	h, _ := parseBlockHeader(v)
	st, _ := tx.stateOf(id, h.created)
	return st, true
}

// Ack marks SENDING or RECEIVED rows ACKED at now, or deletes them at
// once when retention is 0 (CleanupAcked deletes ACKED rows later). Ids
// that are neither are skipped with a warning.
func (tx *Tx) Ack(ids []uint64, retention time.Duration, now int64) error {
	return tx.ack(ids, fromEither, retention, now)
}

func (tx *Tx) ack(ids []uint64, from takeFrom, retention time.Duration, now int64) error {
	if tx.claimsIDs() {
		// The acked rows' batch ids are delivered: forgotten with them.
		if err := tx.forgetClaimed(tx.inFlight(ids, from)); err != nil {
			return err
		}
	}
	if retention <= 0 {
		return tx.ackDelete(ids, from)
	}
	return tx.takeIDs("ack", ids, from, func(id uint64) (bool, error) {
		st, ok := tx.loadSending("ack", id)
		if !ok {
			return false, nil
		}
		st.status, st.updated = StatusAcked, now
		return true, tx.putIndexed(id, &st, tx.acked, tsKey(now, id))
	})
}

// ackDelete is Ack with retention 0, the hot path of a loaded agent: the
// rows leave their index (a few writes per run), their state entries
// (if any) go, and a block goes once none of its rows is left. Nothing
// is decompressed: the payload bytes come from the block's table.
func (tx *Tx) ackDelete(ids []uint64, from takeFrom) error {
	var f blockFreer
	ss := stateScan{c: tx.state.Cursor()}
	err := tx.takeIDs("ack", ids, from, func(id uint64) (bool, error) {
		n, ok := f.payloadLen(tx, id)
		if !ok {
			tx.w.log.Warn("wal: unknown row id", "op", "ack", "row_id", id)
			return false, nil
		}
		tx.ctr.payloadBytes -= int64(n)
		if _, ok := ss.get(id); ok {
			if err := tx.state.Delete(u64key(id)); err != nil {
				return false, fmt.Errorf("wal %s: delete row state %d: %w", tx.w.path, id, err)
			}
			ss.reset()
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return f.free(tx)
}

// blockFreer collects the blocks whose rows a transaction deleted, and
// deletes each once none of its rows is left (free).
type blockFreer struct {
	first, last uint64
	lens        []uint32
	ok          bool
	cached      *block   // the block of first..last when the cache had it
	touched     []uint64 // first ids, in the order met
}

func (f *blockFreer) touch(first uint64) {
	if n := len(f.touched); n == 0 || f.touched[n-1] != first {
		f.touched = append(f.touched, first)
	}
}

// payloadLen returns the payload size of row id from its block's table
// and records the block; ok=false when no block holds id.
func (f *blockFreer) payloadLen(tx *Tx, id uint64) (int, bool) {
	if !f.ok || id < f.first || id > f.last {
		// A cached block has the lengths at hand: no table to parse.
		if b := tx.cache.get(id); b != nil {
			f.first, f.last, f.lens, f.cached, f.ok = b.first, b.last(), nil, b, true
			f.touch(b.first)
			return b.offs[id-b.first+1] - b.offs[id-b.first], true
		}
		f.cached = nil
		first, v, found := tx.findBlock(id)
		if !found {
			return 0, false
		}
		h, lens, ok := blockPayloadLens(v)
		// An unparsable block counts no payload bytes (Verify's recount
		// cannot count them either).
		f.first, f.last, f.lens, f.ok = first, first, nil, true
		if ok {
			f.last, f.lens = h.last(), lens
		}
		f.touch(first)
	}
	if b := f.cached; b != nil {
		return b.offs[id-b.first+1] - b.offs[id-b.first], true
	}
	if f.lens == nil || id > f.last {
		return 0, true
	}
	return int(f.lens[id-f.first]), true
}

// free deletes the touched blocks none of whose rows is left.
func (f *blockFreer) free(tx *Tx) error {
	for i, first := range f.touched {
		if i > 0 && first == f.touched[i-1] {
			continue
		}
		nb := tx.blocks.Bucket(u64key(first))
		if nb == nil {
			continue
		}
		v := nb.Get(blockValueKey)
		last := first
		if h, err := parseBlockHeader(v); err == nil {
			last = h.last()
		} else if k, _ := tx.blocks.Cursor().Seek(u64key(first + 1)); k != nil {
			// An unparsable header: the block reaches up to the next one.
			next, _ := keyID(k)
			last = next - 1
		} else {
			last = tx.nextRow - 1
		}
		if tx.anyLive(first, last) {
			continue
		}
		tx.noteFreed(nb)
		if err := deleteBlock(tx.blocks, u64key(first)); err != nil {
			return fmt.Errorf("wal %s: delete block %d: %w", tx.w.path, first, err)
		}
		if err := tx.dropBlockLane(first); err != nil {
			return err
		}
		tx.cache.drop(first)
		tx.dirty = true
	}
	return nil
}

// anyLive reports whether a row id in lo..hi still exists: it is in the
// pending, sending or received runs, or has a state entry (which every
// row of the delayed, acked and dead indexes has). Four seeks.
func (tx *ReadTx) anyLive(lo, hi uint64) bool {
	if k, _ := tx.state.Cursor().Seek(u64key(lo)); k != nil {
		if id, _ := keyID(k); id <= hi {
			return true
		}
	}
	return tx.pend.overlaps(lo, hi) || tx.send.overlaps(lo, hi) || tx.recv.overlaps(lo, hi)
}

// Fail returns SENDING rows to PENDING, due at notBefore, recording reason.
// charge=true counts an attempt (the engine refused or did not answer);
// a row whose attempts reach maxAttempts (> 0) goes to DEAD instead,
// except a stand-in, which must be delivered (standin.go). It returns
// how many went DEAD.
func (tx *Tx) Fail(ids []uint64, charge bool, notBefore int64, maxAttempts int, reason string, now int64) (dead int, err error) {
	err = tx.takeIDs("fail", ids, fromSending, func(id uint64) (bool, error) {
		st, ok := tx.loadSending("fail", id)
		if !ok {
			return false, nil
		}
		if charge {
			st.attempts++
		}
		st.reason, st.updated = reason, now
		if maxAttempts > 0 && st.attempts >= maxAttempts && !tx.isStandIn(id) {
			st.status = StatusDead
			if err := tx.putDead(id, &st, tx.noteGap(id, GapDeadPrefix+reason)); err != nil {
				return false, err
			}
			dead++
			return true, nil
		}
		st.notBefore = notBefore
		return true, tx.putPending(id, &st, now)
	})
	if err != nil {
		return dead, err
	}
	return dead, tx.flushGaps()
}

// Release returns SENDING rows to PENDING without charging an attempt and
// without changing NotBefore (rows claimed but never sent).
func (tx *Tx) Release(ids []uint64, now int64) error {
	return tx.takeIDs("release", ids, fromSending, func(id uint64) (bool, error) {
		st, ok := tx.loadSending("release", id)
		if !ok {
			return false, nil
		}
		st.updated = now
		return true, tx.putPending(id, &st, now)
	})
}

// ResurrectSending returns every SENDING row to PENDING (start-up: nothing
// is in flight yet) and returns how many moved. RECEIVED rows stay: the
// engine may still commit them.
func (tx *Tx) ResurrectSending(now int64) (int, error) {
	ids := tx.send.ids(0, 0)
	before := tx.ctr.sending
	if err := tx.Release(ids, now); err != nil {
		return 0, err
	}
	return int(before - tx.ctr.sending), nil
}

// CleanupAcked deletes up to max (all when max <= 0) ACKED rows acked at or
// before olderThan (unix ms), oldest first, and returns how many.
func (tx *Tx) CleanupAcked(olderThan int64, max int) (int, error) {
	var keys [][]byte
	c := tx.acked.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if max > 0 && len(keys) >= max {
			break
		}
		ts, _, ok := splitTSKey(k)
		if ok && ts > olderThan {
			break
		}
		keys = append(keys, bytes.Clone(k))
	}
	n := 0
	var f blockFreer
	for _, k := range keys {
		if err := tx.acked.Delete(k); err != nil {
			return n, fmt.Errorf("wal %s: cleanup acked: %w", tx.w.path, err)
		}
		tx.dirty = true
		_, id, ok := splitTSKey(k)
		if !ok {
			continue
		}
		deleted, err := tx.deleteRow(&f, id, StatusAcked)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, f.free(tx)
}

// deleteRow deletes row id of status want (its index entry is gone
// already): its state entry, its payload bytes, its count, and records
// its block for f.free. A row that is not of that status is left alone
// (logged, deleted=false).
func (tx *Tx) deleteRow(f *blockFreer, id uint64, want Status) (deleted bool, err error) {
	rk := u64key(id)
	st, ok := decodeState(tx.state.Get(rk))
	if !ok || st.status != want {
		tx.w.log.Warn("wal: index entry for a row of another status", "row_id", id, "want", want.String())
		return false, nil
	}
	if err := tx.state.Delete(rk); err != nil {
		return false, fmt.Errorf("wal %s: delete row %d: %w", tx.w.path, id, err)
	}
	n, _ := f.payloadLen(tx, id)
	tx.ctr.payloadBytes -= int64(n)
	tx.ctr.add(want, -1)
	return true, nil
}
