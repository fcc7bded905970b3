package wal

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The received index holds the RECEIVED rows as runs of consecutive row
// ids whose batch ids are consecutive too: key = first id, value = last
// id (inclusive), batch id of the first id, and the time (unix ms) the
// run's oldest part was received, 8 bytes each; runs are disjoint. Like
// the sending index it is the only record of the status: a RECEIVED row
// rests as PENDING in its state entry, if it has one. Receive adds a
// group with one write, merged into the run below it when both ids go
// on; the batch id of every row is then known from its run alone, so
// AckReceivedThrough finds the rows a commit covers by walking the runs,
// never the rows it leaves. Stand-in rows (standin.go) carry batch ids
// below their neighbours': they start runs of their own.

// recvRun is one run of the received index.
type recvRun struct {
	start, end uint64
	batch      int64 // batch id of start
	at         int64 // received, unix ms
}

func (r recvRun) batchOf(id uint64) int64 { return r.batch + int64(id-r.start) }

func decodeRecvRun(k, v []byte) (recvRun, bool) {
	start, ok := keyID(k)
	if !ok || len(v) != 24 {
		return recvRun{}, false
	}
	r := recvRun{start: start, end: binary.BigEndian.Uint64(v),
		batch: int64(binary.BigEndian.Uint64(v[8:])), at: int64(binary.BigEndian.Uint64(v[16:]))}
	if r.end < r.start || r.batch <= 0 {
		return recvRun{}, false
	}
	return r, true
}

func (r recvRun) value() []byte {
	v := make([]byte, 24)
	binary.BigEndian.PutUint64(v, r.end)
	binary.BigEndian.PutUint64(v[8:], uint64(r.batch))
	binary.BigEndian.PutUint64(v[16:], uint64(r.at))
	return v
}

func recvEnd(v []byte) (uint64, bool) {
	if len(v) != 24 {
		return 0, false
	}
	return runEnd(v[:8])
}

// recvFind returns the run holding id; ok=false when id is not RECEIVED.
func (tx *ReadTx) recvFind(id uint64) (recvRun, bool) {
	if tx.received == nil {
		return recvRun{}, false
	}
	k, v := runCandidate(tx.received, id)
	if k == nil {
		return recvRun{}, false
	}
	r, ok := decodeRecvRun(k, v)
	if !ok || id < r.start || id > r.end {
		return recvRun{}, false
	}
	return r, true
}

func (tx *ReadTx) isReceived(id uint64) bool {
	_, ok := tx.recvFind(id)
	return ok
}

// recvRuns calls fn for each run in key order until it returns false;
// ok=false marks a malformed entry (r.start is its key, when it has one).
func (tx *ReadTx) recvRuns(fn func(r recvRun, ok bool) bool) {
	if tx.received == nil {
		return
	}
	c := tx.received.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		r, ok := decodeRecvRun(k, v)
		if !ok {
			r.start, _ = keyID(k)
		}
		if !fn(r, ok) {
			return
		}
	}
}

// recvIDs returns up to limit (all when <= 0) RECEIVED ids > afterID,
// in order.
func (tx *ReadTx) recvIDs(afterID uint64, limit int) []uint64 {
	var out []uint64
	tx.recvRuns(func(r recvRun, ok bool) bool {
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

func (tx *Tx) recvPut(r recvRun) error {
	if err := tx.received.Put(u64key(r.start), r.value()); err != nil {
		return fmt.Errorf("wal %s: received index: %w", tx.w.path, err)
	}
	return nil
}

func (tx *Tx) recvDelete(start uint64) error {
	if err := tx.received.Delete(u64key(start)); err != nil {
		return fmt.Errorf("wal %s: received index: %w", tx.w.path, err)
	}
	return nil
}

// recvCut removes a..b (inside r) from run r.
func (tx *Tx) recvCut(r recvRun, a, b uint64) error {
	if r.start < a {
		if err := tx.recvPut(recvRun{start: r.start, end: a - 1, batch: r.batch, at: r.at}); err != nil {
			return err
		}
	} else if err := tx.recvDelete(r.start); err != nil {
		return err
	}
	if b < r.end {
		return tx.recvPut(recvRun{start: b + 1, end: r.end, batch: r.batchOf(b + 1), at: r.at})
	}
	return nil
}

// recvAdd adds run r, whose ids are in no run, merging it with the runs
// just below and above it when both its row ids and batch ids go on from
// theirs. A merged run keeps the older receive time.
func (tx *Tx) recvAdd(r recvRun) error {
	c := tx.received.Cursor()
	k, v := c.Seek(u64key(r.start))
	var succ recvRun
	hasSucc := false
	if k != nil {
		if s, ok := decodeRecvRun(k, v); ok && s.start == r.end+1 && s.batch == r.batchOf(s.start) {
			succ, hasSucc = s, true
		}
		k, v = c.Prev()
	} else {
		k, v = c.Last()
	}
	if k != nil {
		if p, ok := decodeRecvRun(k, v); ok && p.end+1 == r.start && p.batchOf(r.start) == r.batch {
			r.start, r.batch, r.at = p.start, p.batch, min(p.at, r.at)
		}
	}
	if hasSucc {
		if err := tx.recvDelete(succ.start); err != nil {
			return err
		}
		r.end, r.at = succ.end, min(r.at, succ.at)
	}
	return tx.recvPut(r)
}

// recvRemoveRange takes lo..hi out of the runs of the received index.
func (tx *Tx) recvRemoveRange(lo, hi uint64) error {
	var hit []recvRun
	c := tx.received.Cursor()
	c.Seek(u64key(lo)) // positions the cursor for the run that may start before lo
	if pk, pv := c.Prev(); pk != nil {
		if r, ok := decodeRecvRun(pk, pv); ok && r.end >= lo {
			hit = append(hit, r)
		}
	}
	for k, v := c.Seek(u64key(lo)); k != nil; k, v = c.Next() {
		r, ok := decodeRecvRun(k, v)
		if !ok {
			continue
		}
		if r.start > hi {
			break
		}
		hit = append(hit, r)
	}
	for _, r := range hit {
		if err := tx.recvCut(r, max(r.start, lo), min(r.end, hi)); err != nil {
			return err
		}
	}
	return nil
}

// batchReader reads the batch ids and creation times of rows from their
// block headers, parsing each block once for a run of ids in it.
type batchReader struct {
	h  blockHeader
	ok bool
}

// at returns the batch id and creation time of row id; ok=false when no
// block holds it or its block's header does not parse.
func (br *batchReader) at(tx *ReadTx, id uint64) (batch, created int64, ok bool) {
	if !br.ok || id < br.h.first || id > br.h.last() {
		br.ok = false
		_, v, found := tx.findBlock(id)
		if !found {
			return 0, 0, false
		}
		h, err := parseBlockHeader(v)
		if err != nil || id < h.first || id > h.last() {
			return 0, 0, false
		}
		br.h, br.ok = h, true
	}
	return br.h.firstBatch + int64(id-br.h.first), br.h.created, true
}

// Receive moves SENDING rows to RECEIVED: the engine holds them in
// memory, and they stay in the WAL, never claimed, until a commit covers
// them (AckReceivedThrough, Ack) or the engine lost them (Unreceive).
// Ids that are not SENDING are skipped with a warning, as by Ack. Each
// group of consecutive ids costs one index write, merged into the run
// below when it goes on from it.
func (tx *Tx) Receive(ids []uint64, now int64) error {
	var run recvRun // end == 0: none
	flush := func() error {
		if run.end == 0 {
			return nil
		}
		err := tx.recvAdd(run)
		run = recvRun{}
		return err
	}
	var br batchReader
	err := tx.takeIDs("receive", ids, fromSending, func(id uint64) (bool, error) {
		batch, _, ok := br.at(&tx.ReadTx, id)
		if !ok {
			tx.w.log.Warn("wal: row without a readable block stays SENDING", "op", "receive", "row_id", id)
			return false, nil
		}
		if run.end != 0 && id == run.end+1 && batch == run.batchOf(id) {
			run.end = id
		} else {
			if err := flush(); err != nil {
				return false, err
			}
			run = recvRun{start: id, end: id, batch: batch, at: now}
		}
		tx.ctr.received++
		return true, nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// AckReceivedThrough acks every RECEIVED row whose batch id is at or
// below watermark (the engine committed every batch id up to it), as Ack
// does with retention, and returns how many. Cost: one pass over the
// runs of the received index plus the rows acked, whatever the backlog
// above the watermark.
func (tx *Tx) AckReceivedThrough(watermark int64, retention time.Duration, now int64) (n int, err error) {
	var covered []recvRun
	tx.recvRuns(func(r recvRun, ok bool) bool {
		if ok && r.batch <= watermark {
			if d := uint64(watermark - r.batch); d < r.end-r.start {
				r.end = r.start + d
			}
			covered = append(covered, r)
		}
		return true
	})
	before := tx.ctr.received
	var ids []uint64
	for _, r := range covered {
		ids = ids[:0]
		for id := r.start; id <= r.end; id++ {
			ids = append(ids, id)
		}
		if err := tx.ack(ids, fromReceived, retention, now); err != nil {
			return int(before - tx.ctr.received), err
		}
	}
	return int(before - tx.ctr.received), nil
}

// Unreceive returns RECEIVED rows to PENDING, due now, without charging
// an attempt: the engine lost them (it restarted before a commit covered
// them) and they must be sent again, before the rows appended after them
// (Claim takes the lowest ids first). Ids that are not RECEIVED are
// skipped with a warning.
func (tx *Tx) Unreceive(ids []uint64, now int64) error {
	return tx.takeIDs("unreceive", ids, fromReceived, func(id uint64) (bool, error) {
		st, ok := tx.loadSending("unreceive", id)
		if !ok {
			return false, nil
		}
		st.updated, st.notBefore = now, min(st.notBefore, now)
		return true, tx.putPending(id, &st, now)
	})
}

// ReceivedFunc calls fn with the row id, batch id and creation time
// (unix ms) of every RECEIVED row, in ascending row id, until fn returns
// false. An entry of the received index that does not decode, or names
// a row no block holds, is an error wrapping ErrCorrupt.
func (tx *ReadTx) ReceivedFunc(fn func(id uint64, batchID int64, created int64) bool) error {
	var err error
	var br batchReader
	tx.recvRuns(func(r recvRun, ok bool) bool {
		if !ok {
			err = fmt.Errorf("wal %s: received index entry %d does not decode: %w", tx.w.path, r.start, ErrCorrupt)
			return false
		}
		for id := r.start; id <= r.end; id++ {
			_, created, found := br.at(tx, id)
			if !found {
				err = fmt.Errorf("wal %s: received row %d has no readable block: %w", tx.w.path, id, ErrCorrupt)
				return false
			}
			if !fn(id, r.batchOf(id), created) {
				return false
			}
		}
		return true
	})
	return err
}
