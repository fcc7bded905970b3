package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// ReadTx is a read transaction. It is only valid inside the View or Update
// callback that received it. Returned values are copies.
type ReadTx struct {
	w   *WAL
	btx *bolt.Tx

	blocks, state, delayed, timers, acked, dead, meta, app, positions *bolt.Bucket
	// The run indexes (index.go). recv has no bucket in a read-only view
	// of a file older than it (addedBuckets): no row of it is RECEIVED.
	send, recv index
	// ids and retry are the claim_ids index and the claim_retry bucket
	// of a file whose rows get batch ids at claim (claimids.go); no
	// bucket otherwise.
	ids   index
	retry *bolt.Bucket
	// pend is the due PENDING rows of every lane (lanes.go).
	pend pendingSet

	ctr       counters
	nextBatch int64
	nextRow   uint64

	// cache holds decoded blocks: the WAL's, kept across write
	// transactions, or one of the view's own (views run beside writes,
	// so they do not share it). readBytes counts the block values
	// this transaction read through bbolt's mapping (see
	// WAL.afterCommit).
	cache     *blockCache
	readBytes int64
	// origin is the block rowOrigin read last (standin.go).
	origin originCache
}

// Tx is a read-write transaction (see WAL.Update).
type Tx struct {
	ReadTx
	dirty bool
	// onCommit are warnings about changes this Tx made, logged only once
	// it has committed: a rolled-back change did not happen.
	onCommit []warning
	// freed are the file pages of the blocks this Tx deleted (noteFreed).
	freed []fileRange
	// gaps are the stand-ins the operation under way appends when it
	// ends (standin.go).
	gaps []Gap
	// lost are the rows given up that the gap records the operation
	// under way appends will account for (gaprecord.go).
	lost []lostRow
}

type warning struct {
	msg  string
	args []any
}

// warnOnCommit logs msg with args once the transaction has committed.
func (tx *Tx) warnOnCommit(msg string, args ...any) {
	tx.onCommit = append(tx.onCommit, warning{msg, args})
}

func (w *WAL) newReadTx(btx *bolt.Tx) (*ReadTx, error) {
	if err := checkSchema(btx); err != nil {
		return nil, fmt.Errorf("wal %s: %w", w.path, err)
	}
	rt := &ReadTx{w: w, btx: btx, cache: &blockCache{}}
	rt.blocks = btx.Bucket(bucketBlocks)
	rt.state = btx.Bucket(bucketState)
	rt.pend = pendingSet{index: index{btx.Bucket(bucketPending), pendingKind, w.path}}
	w.openLanes(btx, &rt.pend)
	rt.delayed = btx.Bucket(bucketDelayed)
	rt.timers = btx.Bucket(bucketTimers)
	rt.send = index{btx.Bucket(bucketSending), sendingKind, w.path}
	rt.recv = index{btx.Bucket(bucketReceived), receivedKind, w.path}
	rt.ids = index{nil, claimIDsKind, w.path}
	if w.claimIDs || w.opts.ReadOnly {
		rt.ids.b, rt.retry = btx.Bucket(bucketClaimIDs), btx.Bucket(bucketClaimRetry)
		if rt.ids.b == nil || rt.retry == nil {
			rt.ids.b, rt.retry = nil, nil
		}
	}
	rt.acked = btx.Bucket(bucketAcked)
	rt.dead = btx.Bucket(bucketDead)
	rt.meta = btx.Bucket(bucketMeta)
	rt.app = btx.Bucket(bucketApp)
	rt.positions = btx.Bucket(bucketPositions)
	rt.ctr.decode(rt.meta.Get([]byte(metaCounters)))
	if v := rt.meta.Get([]byte(metaNextBatchID)); len(v) == 8 {
		rt.nextBatch = int64(binary.BigEndian.Uint64(v))
	}
	if v := rt.meta.Get([]byte(metaNextRowID)); len(v) == 8 {
		rt.nextRow = binary.BigEndian.Uint64(v)
	}
	if rt.nextBatch <= 0 || rt.nextRow == 0 {
		return nil, fmt.Errorf("wal %s: meta next_batch_id/next_row_id missing: %w", w.path, ErrNotWAL)
	}
	return rt, nil
}

func (w *WAL) newTx(btx *bolt.Tx) (*Tx, error) {
	rt, err := w.newReadTx(btx)
	if err != nil {
		return nil, err
	}
	if rt.recv.b == nil {
		// Open creates it; this only guards a file changed behind it.
		if rt.recv.b, err = btx.CreateBucketIfNotExists(bucketReceived); err != nil {
			return nil, fmt.Errorf("wal %s: create bucket %s: %w", w.path, bucketReceived, err)
		}
	}
	for _, b := range []*bolt.Bucket{rt.blocks, rt.state, rt.pend.b, rt.send.b, rt.recv.b, rt.acked, rt.dead} {
		b.FillPercent = appendFillPercent
	}
	for _, l := range rt.pend.others {
		if l.b == nil {
			return nil, fmt.Errorf("wal %s: bucket %s%s missing: open the WAL with its lanes", w.path, lanePendingPrefix, l.name)
		}
		l.b.FillPercent = appendFillPercent
	}
	rt.cache = &w.cache
	return &Tx{ReadTx: *rt}, nil
}

// flush persists the counters and id allocators changed by this Tx.
func (tx *Tx) flush() error {
	if !tx.dirty {
		return nil
	}
	if err := tx.meta.Put([]byte(metaCounters), tx.ctr.encode()); err != nil {
		return fmt.Errorf("wal %s: put counters: %w", tx.w.path, err)
	}
	if err := tx.meta.Put([]byte(metaNextBatchID), u64key(uint64(tx.nextBatch))); err != nil {
		return fmt.Errorf("wal %s: put next_batch_id: %w", tx.w.path, err)
	}
	if err := tx.meta.Put([]byte(metaNextRowID), u64key(tx.nextRow)); err != nil {
		return fmt.Errorf("wal %s: put next_row_id: %w", tx.w.path, err)
	}
	return nil
}

// Counts are the row counts per status, maintained in O(1).
type Counts struct {
	Pending  int `json:"pending"`
	Sending  int `json:"sending"`
	Received int `json:"received"`
	Acked    int `json:"acked"`
	Dead     int `json:"dead"`
	// Delayed is the part of Pending waiting for its NotBefore.
	Delayed int `json:"delayed"`
	// PayloadBytes is the sum of payload sizes of all rows in the WAL.
	PayloadBytes int64 `json:"payload_bytes"`
	// OldestPending is CreatedAt (unix ms) of the oldest PENDING row, 0 if none.
	OldestPending int64 `json:"oldest_pending"`
	// OldestReceived is CreatedAt (unix ms) of the RECEIVED row with the
	// lowest id (the oldest the engine has not committed), 0 if none.
	OldestReceived int64 `json:"oldest_received"`
	// ChecksumFailures counts rows Claim moved to DEAD for a bad checksum
	// over the life of the file.
	ChecksumFailures int64 `json:"checksum_failures"`
	// StandIns counts the stand-in rows appended (Options.GapFree) over
	// the life of the file.
	StandIns int64 `json:"stand_ins"`
}

// Total is the number of rows in the WAL.
func (c Counts) Total() int { return c.Pending + c.Sending + c.Received + c.Acked + c.Dead }

// Of returns the count for one status.
func (c Counts) Of(s Status) int {
	switch s {
	case StatusPending:
		return c.Pending
	case StatusSending:
		return c.Sending
	case StatusReceived:
		return c.Received
	case StatusAcked:
		return c.Acked
	case StatusDead:
		return c.Dead
	}
	return 0
}

// Counts returns the maintained counters, including this Tx's changes.
func (tx *ReadTx) Counts() Counts {
	c := Counts{
		Pending: int(tx.ctr.pending), Sending: int(tx.ctr.sending), Acked: int(tx.ctr.acked),
		Dead: int(tx.ctr.dead), Delayed: int(tx.ctr.delayed), PayloadBytes: tx.ctr.payloadBytes,
		ChecksumFailures: tx.ctr.checksumFailures, Received: int(tx.ctr.received), StandIns: tx.ctr.standIns,
	}
	// The oldest PENDING row has the lowest id of either pending index.
	oldest := tx.pend.firstID()
	if k, _ := tx.delayed.Cursor().First(); k != nil {
		if id, ok := keyID(k); ok && (oldest == 0 || id < oldest) {
			oldest = id
		}
	}
	c.OldestPending = tx.createdOf(oldest)
	if id := tx.recv.firstID(); id != 0 {
		c.OldestReceived = tx.createdOf(id)
	}
	return c
}

// createdOf is the creation time of row id from its block's header; 0
// for id 0 or a row without a readable block.
func (tx *ReadTx) createdOf(id uint64) int64 {
	if id == 0 {
		return 0
	}
	if _, v, ok := tx.findBlock(id); ok {
		if h, err := parseBlockHeader(v); err == nil {
			return h.created
		}
	}
	return 0
}

// NextBatchID is the batch id the next appended row will get.
func (tx *ReadTx) NextBatchID() int64 { return tx.nextBatch }

// Get returns row id; ok=false when it does not exist. A row whose block
// cannot be decoded is an error wrapping ErrCorrupt, unless Claim moved
// it to DEAD for that already: it is then returned without its payload.
func (tx *ReadTx) Get(id uint64) (Row, bool, error) {
	r, ok, err := tx.row(id)
	if err != nil && !(ok && quarantined(&r)) {
		return Row{}, false, fmt.Errorf("wal %s: %w: %w", tx.w.path, ErrCorrupt, err)
	}
	if ok {
		r.Payload = bytes.Clone(r.Payload)
	}
	return r, ok, nil
}

// row assembles row id from its block, its state and the sending and
// received indexes;
// ok=false when it does not exist (no block holds it, or it is in no
// index). For a block that does not decode, ok is true when the row
// exists, with the block's error and what is known without the block.
// The payload aliases the decoded block.
func (tx *ReadTx) row(id uint64) (Row, bool, error) {
	b := tx.blockOf(id)
	if b == nil {
		return Row{}, false, nil
	}
	st, hasState := tx.stateOf(id, b.created)
	sending, at := tx.sendingAt(id)
	recv, received := tx.recv.find(id)
	if !hasState && !sending && !received && !tx.pend.contains(id) {
		return Row{}, false, nil // deleted, its block still holds others
	}
	var r Row
	if b.err != nil {
		r = Row{ID: id, Status: st.status, Attempts: st.attempts, UpdatedAt: st.updated, NotBefore: st.notBefore, Reason: st.reason}
	} else {
		r = rowOf(b, id, &st)
	}
	if sending {
		r.Status, r.UpdatedAt = StatusSending, at
	} else if received {
		r.Status, r.UpdatedAt = StatusReceived, recv.at
	}
	return r, true, b.err
}

// sendingAt reports whether id is SENDING, and since when.
func (tx *ReadTx) sendingAt(id uint64) (bool, int64) {
	r, ok := tx.send.find(id)
	return ok, r.at
}

func (tx *ReadTx) isSending(id uint64) bool { return tx.send.contains(id) }

// List returns up to limit rows (all when limit <= 0) with id > afterID in id
// order, of one status or of all when status is nil. Rows that cannot be
// decoded are listed with Status 0 and Reason naming the problem, so
// operators can find them.
func (tx *ReadTx) List(status *Status, afterID uint64, limit int) ([]Row, error) {
	var ids []uint64
	switch {
	case status == nil, *status == StatusAcked:
		// ACKED is indexed by ack time, so it is listed by a scan of the
		// blocks; this is for operators, not the hot path.
		return tx.scanRows(status, afterID, limit), nil
	case *status == StatusPending:
		ids = append(tx.pend.ids(afterID, limit), idsAfter(tx.delayed, afterID, limit)...)
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		if limit > 0 && len(ids) > limit {
			ids = ids[:limit]
		}
	case *status == StatusSending:
		ids = tx.send.ids(afterID, limit)
	case *status == StatusReceived:
		ids = tx.recv.ids(afterID, limit)
	case *status == StatusDead:
		ids = idsAfter(tx.dead, afterID, limit)
	default:
		return nil, fmt.Errorf("list wal %s: invalid status %d", tx.w.path, *status)
	}
	out := make([]Row, 0, len(ids))
	for _, id := range ids {
		out = append(out, tx.listRow(id))
	}
	return out, nil
}

// scanRows lists the rows of every block above afterID that still exist.
// Each block is decoded once, and which of its rows exist comes from one
// pass over the runs and state entries in its range.
func (tx *ReadTx) scanRows(status *Status, afterID uint64, limit int) []Row {
	var out []Row
	c := tx.blocks.Cursor()
	// From the block before the first key above afterID: it may hold
	// ids above afterID.
	k, _ := c.Seek(u64key(afterID + 1))
	if k == nil {
		k, _ = cursorLast(c)
	} else if pk, _ := c.Prev(); pk != nil {
		k = pk
	} else {
		k, _ = c.First()
	}
	ss := stateScan{c: tx.state.Cursor()}
	for ; k != nil; k, _ = c.Next() {
		v := getBlock(tx.blocks, k)
		first, ok := keyID(k)
		if !ok {
			continue
		}
		last := first
		if h, err := parseBlockHeader(v); err == nil {
			last = h.last()
		}
		lo := max(first, afterID+1)
		if lo > last {
			continue
		}
		pend, send, recv := tx.pend.in(lo, last), tx.send.in(lo, last), tx.recv.in(lo, last)
		var b *block
		for id := lo; id <= last; id++ {
			if limit > 0 && len(out) >= limit {
				return out
			}
			sv, hasState := ss.get(id)
			inSend, inRecv := inRanges(send, id), inRanges(recv, id)
			if !hasState && !inSend && !inRecv && !inRanges(pend, id) {
				continue
			}
			if b == nil {
				b = decodeBlock(first, v, tx.w.keyring())
			}
			st := rowState{status: StatusPending, updated: b.created}
			if hasState {
				if d, ok := decodeState(sv); ok {
					st = d
				}
			}
			var r Row
			if b.err != nil {
				r = Row{ID: id, Status: st.status, Attempts: st.attempts, UpdatedAt: st.updated, NotBefore: st.notBefore, Reason: st.reason}
				if !quarantined(&r) {
					r = Row{ID: id, Reason: b.err.Error()}
				}
			} else {
				r = rowOf(b, id, &st)
			}
			if inSend {
				r.Status, r.UpdatedAt = StatusSending, tx.sendStart(id)
			} else if inRecv {
				rr, _ := tx.recv.find(id)
				r.Status, r.UpdatedAt = StatusReceived, rr.at
			}
			if status != nil && r.Status != *status {
				continue
			}
			r.Payload = bytes.Clone(r.Payload)
			out = append(out, r)
		}
	}
	return out
}

// sendStart is the claim time of SENDING row id.
func (tx *ReadTx) sendStart(id uint64) int64 {
	r, _ := tx.send.find(id)
	return r.at
}

func (tx *ReadTx) listRow(id uint64) Row {
	r, ok, err := tx.row(id)
	switch {
	case !ok:
		return Row{ID: id, Reason: "index entry without row"}
	case err != nil && !quarantined(&r):
		return Row{ID: id, Reason: err.Error()}
	}
	r.Payload = bytes.Clone(r.Payload)
	return r
}

// idsAfter returns up to limit (all when <= 0) ids > afterID of an
// id-keyed index, in order.
func idsAfter(b *bolt.Bucket, afterID uint64, limit int) []uint64 {
	var ids []uint64
	c := b.Cursor()
	for k, _ := c.Seek(u64key(afterID + 1)); k != nil; k, _ = c.Next() {
		if limit > 0 && len(ids) >= limit {
			break
		}
		if id, ok := keyID(k); ok && id > afterID {
			ids = append(ids, id)
		}
	}
	return ids
}

// CountAckedOlderThan counts ACKED rows acked at or before olderThan (unix
// ms): what PurgeAcked(olderThan) would delete.
func (tx *ReadTx) CountAckedOlderThan(olderThan int64) int {
	n := 0
	c := tx.acked.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		ts, _, ok := splitTSKey(k)
		if ok && ts > olderThan {
			break
		}
		n++
	}
	return n
}

// Meta returns the value SetMeta stored under key, or nil when there is
// none (not an error).
func (tx *ReadTx) Meta(key string) ([]byte, error) {
	if key == "" {
		return nil, fmt.Errorf("wal %s: meta: empty key", tx.w.path)
	}
	return bytes.Clone(tx.app.Get([]byte(key))), nil
}

// SetMeta stores small application metadata (e.g. "input_started:<id>");
// a nil val deletes the key.
func (tx *Tx) SetMeta(key string, val []byte) error {
	if key == "" {
		return fmt.Errorf("wal %s: set meta: empty key", tx.w.path)
	}
	if val == nil {
		return tx.app.Delete([]byte(key))
	}
	if err := tx.app.Put([]byte(key), bytes.Clone(val)); err != nil {
		return fmt.Errorf("wal %s: set meta %q: %w", tx.w.path, key, err)
	}
	return nil
}

// RowIDRange returns the lowest and highest row id present (0, 0 when
// the WAL has no rows). O(1).
func (tx *ReadTx) RowIDRange() (first, last uint64) {
	// Every row is in a run of the pending, sending or received index or
	// has a state entry (state.go): the ends of those four give the range.
	see := func(lo, hi uint64) {
		if lo != 0 && (first == 0 || lo < first) {
			first = lo
		}
		last = max(last, hi)
	}
	if k, _ := tx.state.Cursor().First(); k != nil {
		id, _ := keyID(k)
		see(id, id)
	}
	if k, _ := cursorLast(tx.state.Cursor()); k != nil {
		id, _ := keyID(k)
		see(id, id)
	}
	for _, x := range append(tx.pend.all(), tx.send, tx.recv) {
		if id := x.firstID(); id != 0 {
			see(id, id)
		}
		see(0, x.lastID())
	}
	return first, last
}

// OldestRow returns the lowest-id row of status s (for ACKED: the earliest
// acked); ok=false when there is none. O(1).
func (tx *ReadTx) OldestRow(s Status) (Row, bool, error) {
	var id uint64
	first := func(b *bolt.Bucket, ts bool) uint64 {
		k, _ := b.Cursor().First()
		if k == nil {
			return 0
		}
		if ts {
			_, n, _ := splitTSKey(k)
			return n
		}
		n, _ := keyID(k)
		return n
	}
	switch s {
	case StatusPending:
		a, b := tx.pend.firstID(), first(tx.delayed, false)
		id = a
		if b != 0 && (a == 0 || b < a) {
			id = b
		}
	case StatusSending:
		id = tx.send.firstID()
	case StatusReceived:
		id = tx.recv.firstID()
	case StatusAcked:
		id = first(tx.acked, true)
	case StatusDead:
		id = first(tx.dead, false)
	default:
		return Row{}, false, fmt.Errorf("wal %s: invalid status %d", tx.w.path, s)
	}
	if id == 0 {
		return Row{}, false, nil
	}
	return tx.Get(id)
}
