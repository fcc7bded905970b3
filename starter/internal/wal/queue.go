package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ReasonChecksum is the Reason of a row Claim moved to DEAD because its
// payload no longer matches the stored CRC32C.
const ReasonChecksum = "checksum mismatch"

// reasonUndecodable prefixes the Reason of a row whose stored value could
// not be decoded at all; its raw value is kept as the payload.
const reasonUndecodable = "undecodable row: "

// Append stores rows as PENDING with consecutive row ids first..last and
// batch ids taken from next_batch_id. It returns 0, 0 for no rows.
func (tx *Tx) Append(rows []NewRow) (first, last uint64, err error) {
	if len(rows) == 0 {
		return 0, 0, nil
	}
	// Validate first so that a bad row leaves the transaction untouched.
	for i := range rows {
		if len(rows[i].SourceID) > maxRowString {
			return 0, 0, fmt.Errorf("wal %s: append row %d: source id longer than %d bytes", tx.w.path, i, maxRowString)
		}
		if len(rows[i].Payload) > maxPayload {
			return 0, 0, fmt.Errorf("wal %s: append row %d: payload of %d bytes exceeds %d", tx.w.path, i, len(rows[i].Payload), maxPayload)
		}
	}
	now := tx.w.now().UnixMilli()
	first = tx.nextRow
	var bytesAdded int64
	// Keys and values of the whole group go into two buffers: bbolt keeps
	// every slice until commit, so they are written once and never reused,
	// and two allocations replace two per row.
	size := 0
	for i := range rows {
		size += encodedRowSize(&Row{SourceID: rows[i].SourceID, Payload: rows[i].Payload})
	}
	if err := tx.roomFor(size); err != nil {
		return 0, 0, err
	}
	vals := make([]byte, 0, size)
	keys := make([]byte, 8*len(rows))
	for i := range rows {
		nr := &rows[i]
		id := tx.nextRow
		r := Row{ID: id, BatchID: tx.nextBatch, SourceID: nr.SourceID, Payload: nr.Payload,
			Status: StatusPending, CreatedAt: now, UpdatedAt: now}
		k := keys[8*i : 8*i+8 : 8*i+8]
		binary.BigEndian.PutUint64(k, id)
		start := len(vals)
		vals = appendRow(vals, &r, payloadCRC(nr.Payload))
		if err := tx.rows.Put(k, vals[start:len(vals):len(vals)]); err != nil {
			return 0, 0, fmt.Errorf("wal %s: append row %d: %w", tx.w.path, id, err)
		}
		tx.nextRow++
		tx.nextBatch++
		bytesAdded += int64(len(nr.Payload))
	}
	if err := tx.pendAddRange(first, tx.nextRow-1); err != nil {
		return 0, 0, err
	}
	tx.ctr.pending += int64(len(rows))
	tx.ctr.payloadBytes += bytesAdded
	tx.dirty = true
	return first, tx.nextRow - 1, nil
}

// Claim moves up to limit of the oldest PENDING rows whose NotBefore <= now to
// SENDING and returns them (payload copied). It does not charge an attempt:
// only Fail(charge=true) does, for sends that reached the engine. A row
// whose payload fails its checksum goes to DEAD with Reason
// ReasonChecksum, is counted in Counts.ChecksumFailures and is skipped.
// Cost is O(rows touched): due delayed rows are promoted through the
// time-ordered timers index, never by scanning all PENDING rows. The rows
// themselves are only read; the claimed ids go into the sending index as
// runs (sending.go), one write per run of consecutive ids.
func (tx *Tx) Claim(limit int, now int64) ([]Row, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := tx.promote(now); err != nil {
		return nil, err
	}
	// Sized for the rows there can be: growing a slice of Rows row by row
	// was a third of the bytes a loaded agent allocates.
	out := make([]Row, 0, max(0, min(int64(limit), tx.ctr.pending)))
	var arena []byte // payload copies, carved from shared blocks
	var run sendRun  // the run being built; end == 0: none
	flushRun := func() error {
		if run.end == 0 {
			return nil
		}
		err := tx.sendPut(run)
		run = sendRun{}
		return err
	}
	// One cursor reads every row: ids come in ascending runs, so the next
	// row is usually the cursor's next key, found without a search.
	rc := tx.rows.Cursor()
	var last uint64 // id under rc, 0 when rc must seek
	for len(out) < limit {
		ids, err := tx.pendTake(limit - len(out))
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			break
		}
		tx.dirty = true
		for _, id := range ids {
			var ck, v []byte
			if last != 0 && id == last+1 {
				ck, v = rc.Next()
			} else {
				ck, v = rc.Seek(u64key(id))
			}
			last = id
			if got, ok := keyID(ck); !ok || got != id {
				v, last = nil, 0
			}
			tx.readBytes += int64(len(v))
			if v == nil {
				tx.ctr.pending--
				tx.w.log.Warn("wal: pending index entry without row", "row_id", id)
				continue
			}
			r, crc, err := decodeRow(id, v)
			if err != nil {
				last = 0 // the row is rewritten: the cursor must seek again
				if err := tx.quarantine(id, v, err, now); err != nil {
					return nil, err
				}
				continue
			}
			if r.Status != StatusPending {
				tx.w.log.Warn("wal: pending index entry for row in another state", "row_id", id, "status", r.Status.String())
				continue
			}
			tx.ctr.pending--
			if payloadCRC(r.Payload) != crc {
				tx.warnOnCommit("wal: row failed its checksum, moved to DEAD", "row_id", id, "batch_id", r.BatchID)
				r.Status, r.Reason, r.UpdatedAt = StatusDead, ReasonChecksum, now
				tx.ctr.checksumFailures++
				last = 0
				if err := tx.put(&r, crc, tx.dead, u64key(id)); err != nil {
					return nil, err
				}
				continue
			}
			if run.end != 0 && id == run.end+1 {
				run.end = id
			} else {
				if err := flushRun(); err != nil {
					return nil, err
				}
				run = sendRun{start: id, end: id, at: now}
			}
			tx.ctr.sending++
			r.Status, r.UpdatedAt = StatusSending, now
			if cap(arena)-len(arena) < len(r.Payload) {
				arena = make([]byte, 0, max(claimArenaBlock, len(r.Payload)))
			}
			start := len(arena)
			arena = append(arena, r.Payload...)
			r.Payload = arena[start:len(arena):len(arena)]
			out = append(out, r)
		}
	}
	return out, flushRun()
}

// claimArenaBlock is the size of the blocks claimed payloads are copied
// into: one allocation for a few hundred rows instead of one per row.
const claimArenaBlock = 64 << 10

// put writes r (keeping its stored checksum, so damage stays detectable)
// and adds it to index under key ik, counting it in its status.
func (tx *Tx) put(r *Row, crc uint32, index *bolt.Bucket, ik []byte) error {
	if err := tx.rows.Put(u64key(r.ID), encodeRow(r, crc)); err != nil {
		return fmt.Errorf("wal %s: put row %d: %w", tx.w.path, r.ID, err)
	}
	if err := index.Put(ik, empty); err != nil {
		return fmt.Errorf("wal %s: index row %d: %w", tx.w.path, r.ID, err)
	}
	tx.ctr.add(r.Status, 1)
	tx.dirty = true
	return nil
}

// putRow writes r and counts it in its status, for indexes put by the
// caller.
func (tx *Tx) putRow(r *Row, crc uint32) error {
	if err := tx.rows.Put(u64key(r.ID), encodeRow(r, crc)); err != nil {
		return fmt.Errorf("wal %s: put row %d: %w", tx.w.path, r.ID, err)
	}
	tx.ctr.add(r.Status, 1)
	tx.dirty = true
	return nil
}

// putPending writes a PENDING row into the due or the delayed index.
func (tx *Tx) putPending(r *Row, crc uint32, now int64) error {
	r.Status = StatusPending
	k := u64key(r.ID)
	if r.NotBefore <= now {
		if err := tx.pendAdd(r.ID); err != nil {
			return err
		}
		return tx.putRow(r, crc)
	}
	if err := tx.delayed.Put(k, u64key(uint64(r.NotBefore))); err != nil {
		return fmt.Errorf("wal %s: delay row %d: %w", tx.w.path, r.ID, err)
	}
	tx.ctr.delayed++
	return tx.put(r, crc, tx.timers, tsKey(r.NotBefore, r.ID))
}

// quarantine replaces a row whose value does not decode by a DEAD row that
// keeps the raw value as payload, with an inverted checksum so that a
// `db wal-retry-dead` sends it back to DEAD instead of to the engine.
func (tx *Tx) quarantine(id uint64, v []byte, cause error, now int64) error {
	tx.warnOnCommit("wal: row does not decode, moved to DEAD", "row_id", id, "error", cause)
	r := Row{ID: id, Status: StatusDead, CreatedAt: now, UpdatedAt: now,
		Reason: reasonUndecodable + cause.Error(), Payload: bytes.Clone(v)}
	tx.ctr.pending--
	tx.ctr.checksumFailures++
	// The original payload size is unknown; assume it was the value minus
	// a minimal header, so the later delete of the raw value (counted in
	// full) leaves PayloadBytes about balanced.
	tx.ctr.payloadBytes += int64(min(len(v), rowHeaderSize+2))
	return tx.put(&r, ^payloadCRC(r.Payload), tx.dead, u64key(id))
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
		if err := tx.pendAdd(id); err != nil {
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

// loadSending decodes row id for a transition out of SENDING; ok=false
// (logged) when it is missing or does not decode, and then stays SENDING.
func (tx *Tx) loadSending(op string, id uint64) (Row, uint32, bool) {
	v := tx.rows.Get(u64key(id))
	if v == nil {
		tx.w.log.Warn("wal: unknown row id", "op", op, "row_id", id)
		return Row{}, 0, false
	}
	r, crc, err := decodeRow(id, v)
	if err != nil {
		tx.w.log.Warn("wal: row does not decode", "op", op, "row_id", id, "error", err)
		return Row{}, 0, false
	}
	return r, crc, true
}

// Ack marks SENDING rows ACKED at now, or deletes them at once when
// retention is 0 (CleanupAcked deletes ACKED rows later). Ids that are not
// SENDING are skipped with a warning.
func (tx *Tx) Ack(ids []uint64, retention time.Duration, now int64) error {
	if retention <= 0 {
		return tx.ackDelete(ids)
	}
	return tx.takeSendingIDs("ack", ids, func(id uint64) (bool, error) {
		r, crc, ok := tx.loadSending("ack", id)
		if !ok {
			return false, nil
		}
		r.Status, r.UpdatedAt = StatusAcked, now
		return true, tx.put(&r, crc, tx.acked, tsKey(now, id))
	})
}

// ackDelete is Ack with retention 0, the hot path of a loaded agent: a
// plain delete of each row, plus a few writes per run in the sending
// index. The row is not decoded: its header and lengths are checked in
// place, for the payload byte count.
func (tx *Tx) ackDelete(ids []uint64) error {
	rc := tx.rows.Cursor() // reused: no allocation per row
	var k [8]byte          // cursors do not keep the key they seek
	return tx.takeSendingIDs("ack", ids, func(id uint64) (bool, error) {
		binary.BigEndian.PutUint64(k[:], id)
		rk, v := rc.Seek(k[:])
		if !bytes.Equal(rk, k[:]) {
			tx.w.log.Warn("wal: unknown row id", "op", "ack", "row_id", id)
			return false, nil
		}
		n, ok := payloadSize(v)
		if !ok {
			_, _, err := decodeRow(id, v)
			tx.w.log.Warn("wal: row does not decode", "op", "ack", "row_id", id, "error", err)
			return false, nil
		}
		if err := rc.Delete(); err != nil {
			return false, fmt.Errorf("wal %s: ack row %d: %w", tx.w.path, id, err)
		}
		tx.ctr.payloadBytes -= int64(n)
		return true, nil
	})
}

// Fail returns SENDING rows to PENDING, due at notBefore, recording reason.
// charge=true counts an attempt (the engine refused or did not answer);
// a row whose attempts reach maxAttempts (> 0) goes to DEAD instead.
// It returns how many went DEAD.
func (tx *Tx) Fail(ids []uint64, charge bool, notBefore int64, maxAttempts int, reason string, now int64) (dead int, err error) {
	err = tx.takeSendingIDs("fail", ids, func(id uint64) (bool, error) {
		r, crc, ok := tx.loadSending("fail", id)
		if !ok {
			return false, nil
		}
		if charge {
			r.Attempts++
		}
		r.Reason, r.UpdatedAt = reason, now
		if maxAttempts > 0 && r.Attempts >= maxAttempts {
			r.Status = StatusDead
			if err := tx.put(&r, crc, tx.dead, u64key(id)); err != nil {
				return false, err
			}
			dead++
			return true, nil
		}
		r.NotBefore = notBefore
		return true, tx.putPending(&r, crc, now)
	})
	return dead, err
}

// Release returns SENDING rows to PENDING without charging an attempt and
// without changing NotBefore (rows claimed but never sent).
func (tx *Tx) Release(ids []uint64, now int64) error {
	return tx.takeSendingIDs("release", ids, func(id uint64) (bool, error) {
		r, crc, ok := tx.loadSending("release", id)
		if !ok {
			return false, nil
		}
		r.UpdatedAt = now
		return true, tx.putPending(&r, crc, now)
	})
}

// ResurrectSending returns every SENDING row to PENDING (start-up: nothing
// is in flight yet) and returns how many moved.
func (tx *Tx) ResurrectSending(now int64) (int, error) {
	ids := tx.sendIDs(0, 0)
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
	for _, k := range keys {
		if err := tx.acked.Delete(k); err != nil {
			return n, fmt.Errorf("wal %s: cleanup acked: %w", tx.w.path, err)
		}
		tx.dirty = true
		_, id, ok := splitTSKey(k)
		if !ok {
			continue
		}
		rk := u64key(id)
		v := tx.rows.Get(rk)
		if s, ok := rowStatus(v); !ok || s != StatusAcked {
			tx.w.log.Warn("wal: acked index entry for a row that is not ACKED", "row_id", id)
			continue
		}
		tx.ctr.payloadBytes -= int64(payloadLen(v))
		if err := tx.rows.Delete(rk); err != nil {
			return n, fmt.Errorf("wal %s: cleanup acked row %d: %w", tx.w.path, id, err)
		}
		tx.ctr.acked--
		n++
	}
	return n, nil
}
