package wal

import (
	"fmt"

	"github.com/edge-agent/edge-agent/starter/internal/account"
)

// Gap records (Options.GapRecords). Every row given up undelivered (the
// cases of a stand-in: standin.go) is accounted for, in the same
// transaction, by an in-band record (account.Record): one per run of
// rows of one input, one reason and one file whose "_seq" numbers follow
// one another. The records are new PENDING rows with new row and batch
// ids, in blocks flagged as stand-ins: like stand-ins they are never
// dropped, never go DEAD at the attempt limit, skip Append's room check
// and are counted in Counts.StandIns. The WAL reads "_seq", "_ts" and
// "_file" from the rows' payloads (account.Seq, TS, File); a row whose
// block is unreadable is counted by a record with no sequence range.

// GapOrigin names the agent in its gap records.
type GapOrigin struct {
	Host, AgentID string
}

// lostRow is one row given up, as its gap record needs it.
type lostRow struct {
	source, file, reason string
	seq                  uint64 // 0: unknown
	ts                   int64
	batch                int64
}

// noteLost records row id, given up for g.Reason, for the gap records
// flushGapRecords appends. Stand-ins and gap records are not rows an
// input produced: they get none.
func (tx *Tx) noteLost(id uint64, g Gap) {
	l := lostRow{source: g.Source, reason: g.Reason, batch: g.BatchID}
	if b := tx.blockOf(id); b != nil && b.err == nil {
		if b.standIn {
			return
		}
		p := b.payload(id)
		l.seq, _ = account.Seq(p)
		l.ts = account.TS(p)
		l.file = account.File(p)
	}
	tx.lost = append(tx.lost, l)
}

// gapRuns groups lost rows into records, in the order their runs start.
func gapRuns(lost []lostRow, origin GapOrigin, gapFree bool, now int64) []account.Record {
	type key struct{ source, reason, file string }
	var out []account.Record
	open := map[key]int{}
	for _, l := range lost {
		k := key{l.source, l.reason, l.file}
		i, ok := open[k]
		if ok {
			r := &out[i]
			ok = (l.seq == 0 && !r.Covers()) || (l.seq > 0 && r.Covers() && l.seq == r.LastSeq+1)
		}
		if !ok {
			out = append(out, account.Record{Input: l.source, Host: origin.Host, AgentID: origin.AgentID,
				Reason: l.reason, File: l.file, FirstSeq: l.seq, LastSeq: l.seq, TS: now})
			i = len(out) - 1
			open[k] = i
		}
		r := &out[i]
		r.Count++
		r.LastSeq = l.seq
		if l.ts != 0 {
			if r.FirstTS == 0 || l.ts < r.FirstTS {
				r.FirstTS = l.ts
			}
			r.LastTS = max(r.LastTS, l.ts)
		}
		if gapFree && l.batch > 0 { // 0: given up before a claim gave it an id
			if n := len(r.BatchIDs); n > 0 && r.BatchIDs[n-1][1]+1 == l.batch {
				r.BatchIDs[n-1][1] = l.batch
			} else {
				r.BatchIDs = append(r.BatchIDs, [2]int64{l.batch, l.batch})
			}
		}
	}
	return out
}

// flushGapRecords appends the gap records of the rows noteLost recorded.
func (tx *Tx) flushGapRecords() error {
	if len(tx.lost) == 0 {
		return nil
	}
	now := tx.w.now().UnixMilli()
	recs := gapRuns(tx.lost, *tx.w.opts.GapRecords, tx.w.opts.GapFree, now)
	tx.lost = nil
	return tx.appendGapRecords(recs, now)
}

// AppendGapRecords appends recs as gap records, after every row appended
// before in the transaction: losses an input reports (bytes it never
// read), in order with its rows. Each record is stamped with the agent's
// host and id (Options.GapRecords) and the time now. Without
// Options.GapRecords it appends nothing.
func (tx *Tx) AppendGapRecords(recs []account.Record) error {
	origin := tx.w.opts.GapRecords
	if origin == nil || len(recs) == 0 {
		return nil
	}
	now := tx.w.now().UnixMilli()
	for i := range recs {
		recs[i].Host, recs[i].AgentID, recs[i].TS = origin.Host, origin.AgentID, now
	}
	return tx.appendGapRecords(recs, now)
}

// appendGapRecords appends recs as new PENDING rows in stand-in blocks.
func (tx *Tx) appendGapRecords(recs []account.Record, now int64) error {
	first := tx.nextRow
	var bytes int64
	for i := 0; i < len(recs); i += blockMaxRows {
		group := recs[i:min(len(recs), i+blockMaxRows)]
		rows := make([]NewRow, len(group))
		for k, r := range group {
			rows[k] = NewRow{SourceID: r.Input, Payload: r.Marshal()}
			bytes += int64(len(rows[k].Payload))
		}
		v, _ := tx.w.enc.encode(tx.nextRow, tx.appendBatch(len(rows)), now, rows, false)
		v[1] |= blockStandIn // the header is outside the CRC
		if err := putBlock(tx.blocks, u64key(tx.nextRow), v); err != nil {
			return fmt.Errorf("wal %s: append gap records %d..: %w", tx.w.path, tx.nextRow, err)
		}
		tx.nextRow += uint64(len(rows))
	}
	if err := tx.pend.add(run{start: first, end: tx.nextRow - 1}); err != nil {
		return err
	}
	n := int64(tx.nextRow - first)
	tx.ctr.pending += n
	tx.ctr.standIns += n
	tx.ctr.payloadBytes += bytes
	tx.dirty = true
	return nil
}
