package wal

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Drop reasons, the values of the reason label of the drop counters.
const (
	DropFull = "full"
	DropAge  = "age"
)

// DropTotal is what DropUnsent deleted for one reason over the life of
// the file. It is stored in the same transaction as the drop, so after a
// crash it still accounts for every row that is gone unsent.
type DropTotal struct {
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
}

func dropTotalKey(reason string) []byte { return []byte("wal_dropped:" + reason) }

// DropTotals returns the rows and bytes dropped for each reason
// (DropFull, DropAge) since the file was created.
func (tx *ReadTx) DropTotals() map[string]DropTotal {
	out := map[string]DropTotal{}
	for _, r := range []string{DropFull, DropAge} {
		var t DropTotal
		if v := tx.app.Get(dropTotalKey(r)); len(v) == 16 {
			t.Rows, t.Bytes = int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
		}
		out[r] = t
	}
	return out
}

func (tx *Tx) addDropTotal(reason string, d Dropped) error {
	if d.Rows == 0 {
		return nil
	}
	t := tx.DropTotals()[reason]
	var v [16]byte
	binary.BigEndian.PutUint64(v[:], uint64(t.Rows+int64(d.Rows)))
	binary.BigEndian.PutUint64(v[8:], uint64(t.Bytes+d.Bytes))
	if err := tx.app.Put(dropTotalKey(reason), v[:]); err != nil {
		return fmt.Errorf("wal %s: drop totals: %w", tx.w.path, err)
	}
	return nil
}

// Dropped describes the unsent rows one DropUnsent deleted for one reason.
type Dropped struct {
	Rows  int
	Bytes int64
	// OldestMS and NewestMS are the creation times (unix ms) of the
	// oldest and newest row dropped; 0 when none was.
	OldestMS, NewestMS int64
	// Sources are the input ids of the rows dropped, sorted.
	Sources []string
}

// dropRounds bounds the drops DropUnsent makes to leave room for the
// stand-ins and gap records of the rows it dropped.
const dropRounds = 4

// merge adds what another drop deleted.
func (d *Dropped) merge(o Dropped) {
	if o.Rows == 0 {
		return
	}
	d.add(o.Rows, o.Bytes, o.OldestMS, o.Sources)
	d.NewestMS = max(d.NewestMS, o.NewestMS)
}

func (d *Dropped) add(rows int, bytes, created int64, sources []string) {
	if rows == 0 {
		return
	}
	if d.Rows == 0 || created < d.OldestMS {
		d.OldestMS = created
	}
	d.NewestMS = max(d.NewestMS, created)
	d.Rows += rows
	d.Bytes += bytes
	for _, s := range sources {
		if i, found := slices.BinarySearch(d.Sources, s); !found {
			d.Sources = slices.Insert(d.Sources, i, s)
		}
	}
}

// DropLimits say which unsent rows DropUnsent deletes.
type DropLimits struct {
	// MaxBytes, when above zero: drop while the payload of every row
	// (DEAD and ACKED included) exceeds it, reason "full".
	MaxBytes int64
	// OlderThanMS, when above zero: drop rows created before it (unix
	// ms), reason "age".
	OlderThanMS int64
	// MaxBlocks bounds the commit groups one call drops rows of (the
	// transaction's size); default 64.
	MaxBlocks int
	// LaneOrder, when set, is the order in which the MaxBytes drops take
	// from the lanes ("" the default lane), each oldest first, before
	// the oldest rows of any lane not listed (lanes.go).
	LaneOrder []string
	// Inputs are the drop policies of the inputs (by source id) that
	// have one; an input not listed is DropNormal. Empty: no row's input
	// is looked up (dropinput.go).
	Inputs map[string]DropPolicy
}

// DropUnsent deletes PENDING rows (due or backed off) and RECEIVED rows
// (not committed by the engine: a lost engine would never get them
// again), oldest commit group first, a whole group (block) at a time:
// the groups created before lim.OlderThanMS (age), then more while the
// payload exceeds lim.MaxBytes (full). Rows of a group that are SENDING
// (in flight), ACKED or DEAD are never deleted; a group left with such
// rows is kept for them. Stand-in rows are never deleted, and with
// Options.GapFree every row deleted gets one (standin.go). The totals
// DropTotals reports grow in the same transaction. Blocks are deleted
// (f.free) only after the walk, so the cursor over them stays valid.
// more reports that it stopped at lim.MaxBlocks with work left: call it
// again in a new transaction. With lim.Inputs the rows of a group go by
// their input's DropPolicy (dropinput.go), not a whole group at a time.
//
// With Options.GapRecords, the gap records (and stand-ins) appended for
// the rows dropped take room too: while they put the payload back above
// lim.MaxBytes, more rows are dropped (at most dropRounds times), so that
// a drop leaves the queue within its bound and the caller's backpressure
// is not set by it.
func (tx *Tx) DropUnsent(lim DropLimits) (full, age Dropped, more bool, err error) {
	for round := 0; ; round++ {
		var f, a Dropped
		switch {
		case len(lim.Inputs) > 0:
			f, a, more, err = tx.dropByInput(lim)
		case len(lim.LaneOrder) > 0 && lim.MaxBytes > 0:
			f, a, more, err = tx.dropByLane(lim)
		default:
			f, a, more, err = tx.dropUnsent(lim)
		}
		if err != nil {
			return full, age, false, err
		}
		full.merge(f)
		age.merge(a)
		if err := tx.flushGaps(); err != nil {
			return full, age, false, err
		}
		if more || f.Rows == 0 || lim.MaxBytes <= 0 || tx.w.opts.GapRecords == nil || tx.ctr.payloadBytes <= lim.MaxBytes || round+1 == dropRounds {
			break
		}
	}
	if err := tx.addDropTotal(DropFull, full); err != nil {
		return full, age, false, err
	}
	return full, age, more, tx.addDropTotal(DropAge, age)
}

func (tx *Tx) dropUnsent(lim DropLimits) (full, age Dropped, more bool, err error) {
	if lim.MaxBlocks <= 0 {
		lim.MaxBlocks = 64
	}
	var f blockFreer
	c := tx.blocks.Cursor()
	dropped := 0 // blocks that lost rows
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		h, err := parseBlockHeader(getBlock(tx.blocks, k))
		if err != nil {
			continue // its rows go DEAD at their claim
		}
		var into *Dropped
		gap := GapDroppedAge
		switch {
		case lim.OlderThanMS > 0 && h.created < lim.OlderThanMS:
			into = &age
		case lim.MaxBytes > 0 && tx.ctr.payloadBytes > lim.MaxBytes:
			into, gap = &full, GapDroppedFull
		default:
			return full, age, false, f.free(tx)
		}
		if h.standIn {
			continue // never dropped: standin.go
		}
		if dropped == lim.MaxBlocks {
			return full, age, true, f.free(tx)
		}
		went, err := tx.dropBlock(&f, h, gap, into)
		if err != nil {
			return full, age, false, err
		}
		if went {
			dropped++
		}
	}
	return full, age, false, f.free(tx)
}

// dropBlock drops the unsent rows of the block h heads for reason gap and
// counts them into into, with the block's inputs; it reports whether any
// row went.
func (tx *Tx) dropBlock(f *blockFreer, h blockHeader, gap string, into *Dropped) (bool, error) {
	rows, bytes, err := tx.dropPendingIn(f, h.first, h.last(), gap)
	if err != nil {
		return false, err
	}
	var sources []string
	if rows > 0 {
		if b := tx.blockOf(h.first); b != nil && b.err == nil {
			sources = b.sources
		}
	}
	into.add(rows, bytes, h.created, sources)
	return rows > 0, nil
}

// dropPendingIn deletes the PENDING rows with ids lo..hi, due or
// delayed, and the RECEIVED ones, noting a gap of reason gap for each,
// and returns how many and their payload bytes.
func (tx *Tx) dropPendingIn(f *blockFreer, lo, hi uint64, gap string) (int, int64, error) {
	rows, bytes := 0, int64(0)
	for id := lo; id <= hi; id++ {
		ik := u64key(id)
		status := StatusPending
		due := tx.pend.contains(id)
		var delayedUntil []byte
		if !due {
			if delayedUntil = tx.delayed.Get(ik); delayedUntil == nil {
				if !tx.isReceived(id) {
					continue
				}
				status = StatusReceived
			}
		}
		if delayedUntil != nil {
			nb, _ := keyID(delayedUntil)
			if err := tx.timers.Delete(tsKey(int64(nb), id)); err != nil {
				return rows, bytes, fmt.Errorf("wal %s: drop row %d: %w", tx.w.path, id, err)
			}
			if err := tx.delayed.Delete(ik); err != nil {
				return rows, bytes, fmt.Errorf("wal %s: drop row %d: %w", tx.w.path, id, err)
			}
			tx.ctr.delayed--
		}
		if tx.state.Get(ik) != nil {
			if err := tx.state.Delete(ik); err != nil {
				return rows, bytes, fmt.Errorf("wal %s: drop row %d: %w", tx.w.path, id, err)
			}
		}
		tx.noteGap(id, gap)
		n, _ := f.payloadLen(tx, id)
		tx.ctr.payloadBytes -= int64(n)
		tx.ctr.add(status, -1)
		rows++
		bytes += int64(n)
	}
	if err := tx.pend.removeRange(lo, hi); err != nil {
		return rows, bytes, err
	}
	if err := tx.recv.removeRange(lo, hi); err != nil {
		return rows, bytes, err
	}
	if rows > 0 {
		tx.dirty = true
	}
	return rows, bytes, nil
}
