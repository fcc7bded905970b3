package wal

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Batch ids given at claim and kept until delivered (Options.SendOrderBatchIDs
// with Options.GapFree: lanes or newest-first draining with CHECKPOINT
// delivery). The engine's committed watermark only passes consecutive
// batch ids, and a row sent out of append order must still carry an id
// above every id sent before it. So, in this mode:
//
//   - Append gives rows no batch id (their blocks hold a placeholder);
//     a row gets the next id of next_batch_id at its first claim, in
//     the same transaction, recorded in the claim_ids run index (row id
//     -> batch id). The ids handed out are gap-free and increasing in
//     claim order.
//   - A row keeps its id until it is acked: a failed send, a release, a
//     restart (SENDING rows return to PENDING) or an engine that lost it
//     (Unreceive) returns it to PENDING with its id, listed in
//     claim_retry (batch id -> row id). Every claim first takes the due
//     rows of claim_retry, lowest batch id first, whatever their lane,
//     so ids already sent reach the engine again before any new id.
//   - A row given up after its claim (dropped, DEAD) gets a stand-in
//     with its id, itself in claim_ids and claim_retry. A row given up
//     before its first claim has no id the engine could wait for: it
//     gets no stand-in (a gap record still accounts for it).
//
// The mode is recorded in meta (claim_batch_ids) at the first read-write
// open that asks for it, and stays with the file: the placeholder ids of
// its blocks must never be sent, so later opens keep giving ids at claim
// whatever their options.
var (
	bucketClaimIDs   = []byte("claim_ids")   // first row id -> last row id, first batch id: rows given their batch id at a claim (claimids.go)
	bucketClaimRetry = []byte("claim_retry") // batch id -> row id: such rows PENDING again, sent before any new id (claimids.go)
)

// metaClaimBatchIDs marks a file whose rows get their batch ids at claim.
const metaClaimBatchIDs = "claim_batch_ids"

// placeholderBatch is the batch id stored in the blocks of rows appended
// with ids given at claim: never sent.
const placeholderBatch = 1

// claimIDsKind: touching runs merge when their batch ids go on too, as
// consecutive claims of one lane do.
var claimIDsKind = &runKind{name: "claim ids", batch: true, merges: true, mergeBatch: true}

// setUpClaimIDs, in Open's transaction, records the mode when o asks for
// it and creates its buckets when the file is in it; it reports whether
// the file is.
func setUpClaimIDs(btx *bolt.Tx, o Options) (bool, error) {
	meta := btx.Bucket(bucketMeta)
	on := meta.Get([]byte(metaClaimBatchIDs)) != nil
	if !on && o.GapFree && o.SendOrderBatchIDs {
		if err := meta.Put([]byte(metaClaimBatchIDs), []byte{1}); err != nil {
			return false, fmt.Errorf("put meta %s: %w", metaClaimBatchIDs, err)
		}
		on = true
	}
	if !on {
		return false, nil
	}
	for _, name := range [][]byte{bucketClaimIDs, bucketClaimRetry} {
		if _, err := btx.CreateBucketIfNotExists(name); err != nil {
			return false, fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return true, nil
}

// claimsIDs reports whether rows get their batch ids at claim.
func (tx *ReadTx) claimsIDs() bool { return tx.ids.b != nil }

// appendBatch is the first batch id Append stores for n rows, advancing
// next_batch_id unless ids are given at claim.
func (tx *Tx) appendBatch(n int) int64 {
	if tx.claimsIDs() {
		return placeholderBatch
	}
	b := tx.nextBatch
	tx.nextBatch += int64(n)
	return b
}

// claimedBatch returns the batch id row id was given at a claim; hint
// caches the run found, for ascending lookups.
func (tx *ReadTx) claimedBatch(id uint64, hint *run) (int64, bool) {
	if hint != nil && hint.end != 0 && id >= hint.start && id <= hint.end {
		return hint.batchOf(id), true
	}
	r, ok := tx.ids.find(id)
	if !ok {
		return 0, false
	}
	if hint != nil {
		*hint = r
	}
	return r.batchOf(id), true
}

// forgetClaimed drops rows from claim_ids and claim_retry: they were
// acked, or their id passed to a stand-in.
func (tx *Tx) forgetClaimed(ids []uint64) error {
	if !tx.claimsIDs() {
		return nil
	}
	for i := 0; i < len(ids); {
		r, ok := tx.ids.find(ids[i])
		if !ok {
			i++
			continue
		}
		j := i + 1
		for j < len(ids) && ids[j] == ids[j-1]+1 && ids[j] <= r.end {
			j++
		}
		for _, id := range ids[i:j] {
			if err := tx.retry.Delete(u64key(uint64(r.batchOf(id)))); err != nil {
				return fmt.Errorf("wal %s: claim retry of row %d: %w", tx.w.path, id, err)
			}
		}
		if err := tx.ids.cut(r, ids[i], ids[j-1]); err != nil {
			return err
		}
		tx.dirty = true
		i = j
	}
	return nil
}

// listRetry records that row id, PENDING again, goes out again under
// the batch id it was given, if it was given one.
func (tx *Tx) listRetry(id uint64) error {
	if !tx.claimsIDs() {
		return nil
	}
	b, ok := tx.claimedBatch(id, nil)
	if !ok {
		return nil
	}
	if err := tx.retry.Put(u64key(uint64(b)), u64key(id)); err != nil {
		return fmt.Errorf("wal %s: claim retry of row %d: %w", tx.w.path, id, err)
	}
	return nil
}

// addClaimed records stand-in rows first.. with their batch ids
// (flushStandIns) and lists them for retry: they carry ids the engine
// waits for.
func (tx *Tx) addClaimed(first uint64, gaps []Gap) error {
	for i, g := range gaps {
		id := first + uint64(i)
		if err := tx.ids.add(run{start: id, end: id, batch: g.BatchID}); err != nil {
			return err
		}
		if err := tx.retry.Put(u64key(uint64(g.BatchID)), u64key(id)); err != nil {
			return fmt.Errorf("wal %s: claim retry of row %d: %w", tx.w.path, id, err)
		}
	}
	return nil
}

// claimRetries claims the due rows of claim_retry, lowest batch id
// first, up to limit rows and maxBytes payload bytes (the first row
// whatever its size), each under its batch id. It returns how many it
// claimed, the payload bytes, and whether it stopped at a bound. Entries
// whose row is neither due nor backed off are stale and deleted.
func (tx *Tx) claimRetries(limit, maxBytes int, now int64, fn func(r *Row)) (claimed, used int, bounded bool, err error) {
	if !tx.claimsIDs() || limit <= 0 {
		return 0, 0, false, nil
	}
	if err := tx.promote(now); err != nil {
		return 0, 0, false, err
	}
	type entry struct {
		batch int64
		id    uint64
	}
	var due []entry
	var stale [][]byte
	c := tx.retry.Cursor()
	for k, v := c.First(); k != nil && len(due) < limit; k, v = c.Next() {
		b, ok := keyID(k)
		id, ok2 := keyID(v)
		switch {
		case !ok || !ok2:
			stale = append(stale, bytes.Clone(k))
		case tx.pend.contains(id):
			due = append(due, entry{int64(b), id})
		case tx.delayed.Get(u64key(id)) == nil:
			stale = append(stale, bytes.Clone(k))
		}
	}
	for _, k := range stale {
		if err := tx.retry.Delete(k); err != nil {
			return 0, 0, false, fmt.Errorf("wal %s: claim retry: %w", tx.w.path, err)
		}
		tx.dirty = true
	}
	count := func(r *Row) { used += len(r.Payload); fn(r) }
	for _, e := range due {
		if maxBytes > 0 && claimed > 0 && used >= maxBytes {
			return claimed, used, true, nil
		}
		budget := 0
		if maxBytes > 0 {
			budget = max(1, maxBytes-used)
		}
		// The row is in its lane's index, or the default lane's when
		// its lane was folded into it.
		n := 0
		for _, x := range tx.pend.all() {
			if !x.contains(e.id) {
				continue
			}
			if n, _, err = tx.claimFunc(pendSource{x: x, from: e.id, below: e.id + 1, reuse: e.batch}, 1, budget, now, count); err != nil {
				return claimed, used, false, err
			}
			break
		}
		if err := tx.retry.Delete(u64key(uint64(e.batch))); err != nil {
			return claimed, used, false, fmt.Errorf("wal %s: claim retry of row %d: %w", tx.w.path, e.id, err)
		}
		claimed += n
	}
	return claimed, used, claimed >= limit || (maxBytes > 0 && used >= maxBytes), nil
}

// inFlight returns the ids of ids that are SENDING or RECEIVED, as from
// says: the rows an ack takes.
func (tx *ReadTx) inFlight(ids []uint64, from takeFrom) []uint64 {
	out := make([]uint64, 0, len(ids))
	var sr, rr run
	for _, id := range ids {
		switch {
		case from&fromSending != 0 && inRun(tx.send, id, &sr):
		case from&fromReceived != 0 && inRun(tx.recv, id, &rr):
		default:
			continue
		}
		out = append(out, id)
	}
	return out
}

// inRun reports whether x holds id, looking in *hint first and keeping
// the run found there.
func inRun(x index, id uint64, hint *run) bool {
	if hint.end != 0 && id >= hint.start && id <= hint.end {
		return true
	}
	r, ok := x.find(id)
	if ok {
		*hint = r
	}
	return ok
}

// UnsettledFunc calls fn with the row id and batch id of every row whose
// batch id may have reached the engine without a commit covering it,
// until fn returns false: the RECEIVED rows (in ascending row id), then,
// when ids are given at claim, the rows PENDING again under the id they
// were sent with (ascending by batch id). On a new session a collector
// settles all of them, lowest batch id first, before any other send: a
// fresh job takes the first id it receives as its floor and answers ACK
// for every lower one, so an id sent again after a higher one would be
// confirmed before any checkpoint covered it.
func (tx *ReadTx) UnsettledFunc(fn func(id uint64, batchID int64) bool) error {
	more := true
	err := tx.ReceivedFunc(func(id uint64, b int64, _ int64) bool {
		more = fn(id, b)
		return more
	})
	if err != nil || !more || tx.retry == nil {
		return err
	}
	c := tx.retry.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		b, ok := keyID(k)
		id, ok2 := keyID(v)
		if ok && ok2 && !fn(id, int64(b)) {
			return nil
		}
	}
	return nil
}

// receiveRetriesThrough moves the rows of claim_retry whose batch id is
// at or below watermark to RECEIVED, for AckReceivedThrough to ack: the
// engine committed those ids (a send whose answer was lost, or a
// stand-in for a row it had). Sent again later, the lowest of them
// would become a fresh job's floor, below ids acked and forgotten here,
// and its watermark would stop at the first of those.
func (tx *Tx) receiveRetriesThrough(watermark int64, now int64) error {
	type entry struct {
		key   []byte
		id    uint64
		batch int64
	}
	var covered []entry
	c := tx.retry.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		b, ok := keyID(k)
		id, ok2 := keyID(v)
		if !ok || !ok2 || int64(b) > watermark {
			break
		}
		covered = append(covered, entry{bytes.Clone(k), id, int64(b)})
	}
	for _, e := range covered {
		if err := tx.retry.Delete(e.key); err != nil {
			return fmt.Errorf("wal %s: claim retry of row %d: %w", tx.w.path, e.id, err)
		}
		tx.dirty = true
		ik := u64key(e.id)
		switch {
		case tx.pend.contains(e.id):
			if err := tx.pend.removeRange(e.id, e.id); err != nil {
				return err
			}
		case tx.delayed.Get(ik) != nil:
			nb, _ := keyID(tx.delayed.Get(ik))
			if err := tx.timers.Delete(tsKey(int64(nb), e.id)); err != nil {
				return fmt.Errorf("wal %s: row %d: %w", tx.w.path, e.id, err)
			}
			if err := tx.delayed.Delete(ik); err != nil {
				return fmt.Errorf("wal %s: row %d: %w", tx.w.path, e.id, err)
			}
			tx.ctr.delayed--
		default:
			continue // stale
		}
		tx.ctr.pending--
		if err := tx.recv.add(run{start: e.id, end: e.id, batch: e.batch, at: now}); err != nil {
			return err
		}
		tx.ctr.received++
	}
	return nil
}
