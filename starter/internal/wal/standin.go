package wal

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Stand-ins (Options.GapFree). An engine that commits by checkpoint
// reports a watermark that only passes consecutive batch ids: a batch id
// the agent allocated and never delivers would hold back every later
// one. So, with GapFree, a row that leaves the WAL or gives up without
// its payload delivered gets, in the same transaction, a stand-in: a new
// PENDING row, with a new row id but the same batch id and source id,
// whose payload says what it stands for (Gap). The cases:
//
//	DropUnsent drops a PENDING or RECEIVED row   "dropped: queue full" / "dropped: max-age"
//	Fail at maxAttempts moves a row to DEAD      "dead: <reason>"
//	Claim quarantines a row (bad block)          "dead: <reason>"
//	PurgeDead deletes a DEAD row without one     "purged"
//
// A stand-in is sent and acked like any row, and must itself be
// delivered: DropUnsent never drops one, and Fail at maxAttempts backs
// it off as below the limit instead of moving it to DEAD, so no stand-in
// needs another. A stand-in whose own block fails its checksum is the
// exception: it goes DEAD at its claim like any row, and gets a stand-in
// (the payload is rebuilt, so no loop follows unless the disk keeps
// damaging blocks). A DEAD row that got a stand-in is marked in the dead
// index (value 0x01); PurgeDead adds no second one. After RetryDead such
// a row is sent again with its batch id, which its stand-in may have
// delivered already: the engine does not deduplicate, so the job gets
// both the stand-in and the row (a duplicate id, no loss). Stand-ins are appended without the room check of Append: they
// are tiny and come from transactions that mostly free space, like the
// acks the disk reserve is kept for. They are stored in blocks of their
// own, one per run of consecutive batch ids, flagged in the header
// (block.go), and counted in Counts.StandIns. With GapFree false none is
// ever made, but stand-ins already in the file keep their rules.

// Stand-in reasons (Gap.Reason).
const (
	GapDroppedFull = "dropped: queue full"
	GapDroppedAge  = "dropped: max-age"
	GapPurged      = "purged"
	// GapDeadPrefix starts the reason of a row that went DEAD; the row's
	// own reason follows.
	GapDeadPrefix = "dead: "
)

// deadHasStandIn is the dead index value of a row that got a stand-in.
var deadHasStandIn = []byte{1}

// Gap is what a stand-in's payload says, the JSON object
//
//	{"edge_agent_gap":{"batch_id":123,"source":"<source id>","reason":"dropped: queue full","created_ms":1700000000000}}
//
// with the members in this order; the shape is stable.
type Gap struct {
	// BatchID is the batch id of the row it stands for (and its own).
	BatchID int64 `json:"batch_id"`
	// Source is the source id of that row ("" when its block was unreadable).
	Source string `json:"source"`
	// Reason is one of GapDroppedFull, GapDroppedAge, GapPurged or
	// GapDeadPrefix and the row's reason.
	Reason string `json:"reason"`
	// CreatedMS is when that row was appended (unix ms).
	CreatedMS int64 `json:"created_ms"`
}

type gapDoc struct {
	Gap Gap `json:"edge_agent_gap"`
}

var gapPrefix = []byte(`{"edge_agent_gap":`)

// ParseStandIn returns the Gap of a stand-in's payload; ok=false when the
// payload is not one.
func ParseStandIn(payload []byte) (Gap, bool) {
	if !bytes.HasPrefix(payload, gapPrefix) {
		return Gap{}, false
	}
	var d gapDoc
	if err := json.Unmarshal(payload, &d); err != nil || d.Gap.BatchID <= 0 {
		return Gap{}, false
	}
	return d.Gap, true
}

func (g Gap) payload() []byte {
	b, _ := json.Marshal(gapDoc{g}) // a struct of strings and ints: cannot fail
	return b
}

// rowOrigin reads what a stand-in for row id needs from its block's
// header and table, without decompressing: ok=false when no block holds
// it or its header does not parse (its batch id is then unknown).
func (tx *ReadTx) rowOrigin(id uint64) (g Gap, standIn, ok bool) {
	o := &tx.origin
	if !o.ok || id < o.h.first || id > o.h.last() {
		// A drop asks for every row of a block in turn: the block is
		// parsed once. Blocks never change, so what was read stays right.
		o.ok = false
		_, v, found := tx.findBlock(id)
		if !found {
			return Gap{}, false, false
		}
		h, err := parseBlockHeader(v)
		if err != nil || id < h.first || id > h.last() {
			return Gap{}, false, false
		}
		o.h, o.ok = h, true
		o.t, err = parseBlockTable(h, v)
		o.tableOK = err == nil
	}
	g = Gap{BatchID: o.h.firstBatch + int64(id-o.h.first), CreatedMS: o.h.created}
	if o.tableOK {
		g.Source = o.t.sources[o.t.src[id-o.h.first]]
	}
	return g, o.h.standIn, true
}

// originCache is the block rowOrigin parsed last.
type originCache struct {
	h           blockHeader
	t           blockTable
	ok, tableOK bool
}

// isStandIn reports whether row id is a stand-in.
func (tx *ReadTx) isStandIn(id uint64) bool {
	_, s, ok := tx.rowOrigin(id)
	return ok && s
}

// noteGap records that row id leaves undelivered for reason: a stand-in
// when the WAL is GapFree, a line of a gap record when it keeps
// Options.GapRecords (gaprecord.go); flushGaps appends them. It reports
// whether either will be appended.
func (tx *Tx) noteGap(id uint64, reason string) bool {
	if !tx.w.opts.GapFree && tx.w.opts.GapRecords == nil {
		return false
	}
	g, _, ok := tx.rowOrigin(id)
	if !ok {
		tx.warnOnCommit("wal: row left without a stand-in or gap record: its block header is unreadable, so is its batch id",
			"row_id", id, "reason", reason)
		return false
	}
	g.Reason = reason
	sent := true
	if tx.claimsIDs() {
		// Only an id a claim gave can be waited for by the engine; it
		// passes to the stand-in.
		g.BatchID, sent = tx.claimedBatch(id, nil)
		if sent {
			if err := tx.forgetClaimed([]uint64{id}); err != nil {
				tx.warnOnCommit("wal: row's claimed batch id not forgotten", "row_id", id, "error", err)
			}
		}
	}
	if tx.w.opts.GapRecords != nil {
		tx.noteLost(id, g)
	}
	if tx.w.opts.GapFree && sent {
		tx.gaps = append(tx.gaps, g)
		return true
	}
	return tx.w.opts.GapRecords != nil
}

// flushGaps appends the stand-ins and gap records noteGap recorded.
func (tx *Tx) flushGaps() error {
	if err := tx.flushStandIns(); err != nil {
		return err
	}
	return tx.flushGapRecords()
}

// flushStandIns appends the stand-ins noteGap recorded, as PENDING rows
// with the next row ids, one block per run of consecutive batch ids.
func (tx *Tx) flushStandIns() error {
	if len(tx.gaps) == 0 {
		return nil
	}
	gaps := tx.gaps
	tx.gaps = nil
	now := tx.w.now().UnixMilli()
	first := tx.nextRow
	var bytes int64
	for i := 0; i < len(gaps); {
		j := i + 1
		for j < len(gaps) && j-i < blockMaxRows && gaps[j].BatchID == gaps[j-1].BatchID+1 {
			j++
		}
		rows := make([]NewRow, j-i)
		for k := range rows {
			g := gaps[i+k]
			rows[k] = NewRow{SourceID: g.Source, Payload: g.payload()}
			bytes += int64(len(rows[k].Payload))
		}
		v, _ := tx.w.enc.encode(tx.nextRow, gaps[i].BatchID, now, rows, false)
		v[1] |= blockStandIn // the header is outside the CRC
		if err := putBlock(tx.blocks, u64key(tx.nextRow), v); err != nil {
			return fmt.Errorf("wal %s: append stand-ins %d..: %w", tx.w.path, tx.nextRow, err)
		}
		tx.nextRow += uint64(len(rows))
		i = j
	}
	if err := tx.pend.add(run{start: first, end: tx.nextRow - 1}); err != nil {
		return err
	}
	if tx.claimsIDs() {
		if err := tx.addClaimed(first, gaps); err != nil {
			return err
		}
	}
	n := int64(tx.nextRow - first)
	tx.ctr.pending += n
	tx.ctr.standIns += n
	tx.ctr.payloadBytes += bytes
	tx.dirty = true
	return nil
}
