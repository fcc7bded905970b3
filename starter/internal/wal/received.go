package wal

import (
	"fmt"
	"time"
)

// The received index (index.go, receivedKind) holds the RECEIVED rows as
// runs whose batch ids are consecutive too, each with the batch id of its
// first row and the time its oldest part was received. Like the sending
// index it is the only record of the status: a RECEIVED row rests as
// PENDING in its state entry, if it has one. Receive adds a group with
// one write, merged into the run below it when both ids go on; the batch
// id of every row is then known from its run alone, so AckReceivedThrough
// finds the rows a commit covers by walking the runs, never the rows it
// leaves. Stand-in rows (standin.go) carry batch ids below their
// neighbours': they start runs of their own.

func (tx *ReadTx) isReceived(id uint64) bool { return tx.recv.contains(id) }

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
	var cur run // end == 0: none
	flush := func() error {
		if cur.end == 0 {
			return nil
		}
		err := tx.recv.add(cur)
		cur = run{}
		return err
	}
	var br batchReader
	var given run // the claim_ids run found last (claimids.go)
	err := tx.takeIDs("receive", ids, fromSending, func(id uint64) (bool, error) {
		batch, _, ok := br.at(&tx.ReadTx, id)
		if tx.claimsIDs() {
			// Sent under the id its claim gave it, not its block's.
			batch, ok = tx.claimedBatch(id, &given)
		}
		if !ok {
			tx.w.log.Warn("wal: row without a readable block stays SENDING", "op", "receive", "row_id", id)
			return false, nil
		}
		if cur.end != 0 && id == cur.end+1 && batch == cur.batchOf(id) {
			cur.end = id
		} else {
			if err := flush(); err != nil {
				return false, err
			}
			cur = run{start: id, end: id, batch: batch, at: now}
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
// does with retention, and returns how many; with batch ids given at
// claim, also the rows PENDING again under such an id (claimids.go). Cost: one pass over the
// runs of the received index plus the rows acked, whatever the backlog
// above the watermark.
func (tx *Tx) AckReceivedThrough(watermark int64, retention time.Duration, now int64) (n int, err error) {
	if tx.claimsIDs() {
		if err := tx.receiveRetriesThrough(watermark, now); err != nil {
			return 0, err
		}
	}
	var covered []run
	tx.recv.each(func(r run, ok bool) bool {
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
	tx.recv.each(func(r run, ok bool) bool {
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
