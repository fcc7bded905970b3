package wal

import (
	"encoding/binary"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// sendingRuns lists the sending index as [start, end] pairs.
func sendingRuns(t *testing.T, w *WAL) [][2]uint64 {
	t.Helper()
	var out [][2]uint64
	_ = w.View(func(tx *ReadTx) error {
		tx.sendRuns(func(r sendRun, ok bool) bool {
			if !ok {
				t.Errorf("malformed sending run at %d", r.start)
			}
			out = append(out, [2]uint64{r.start, r.end})
			return true
		})
		return nil
	})
	return out
}

// TestSendingRunsSplit: a claimed group is one run; acking, failing and
// releasing parts of it leave exactly the other rows SENDING, with their
// claim time.
func TestSendingRunsSplit(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 10)
	if got := claim(t, w, 10, t0+5); len(got) != 10 {
		t.Fatalf("claimed %d", len(got))
	}
	if runs := sendingRuns(t, w); !slices.Equal(runs, [][2]uint64{{1, 10}}) {
		t.Fatalf("runs after claim %v", runs)
	}
	mustUpdate(t, w, func(tx *Tx) error {
		if err := tx.Ack([]uint64{3, 4, 5}, 0, t0+6); err != nil {
			return err
		}
		if _, err := tx.Fail([]uint64{7}, true, t0+100, 5, "RETRY", t0+6); err != nil {
			return err
		}
		if err := tx.Release([]uint64{9, 1}, t0+6); err != nil {
			return err
		}
		return tx.Ack([]uint64{4, 42}, 0, t0+6) // acked twice, unknown: skipped
	})
	if runs := sendingRuns(t, w); !slices.Equal(runs, [][2]uint64{{2, 2}, {6, 6}, {8, 8}, {10, 10}}) {
		t.Fatalf("runs after split %v", runs)
	}
	want := map[uint64]Status{1: StatusPending, 2: StatusSending, 6: StatusSending, 7: StatusPending,
		8: StatusSending, 9: StatusPending, 10: StatusSending}
	for id, st := range want {
		r := getRow(t, w, id)
		if r.Status != st {
			t.Errorf("row %d: %s, want %s", id, r.Status, st)
		}
		if st == StatusSending && r.UpdatedAt != t0+5 {
			t.Errorf("row %d: updated %d, want the claim time %d", id, r.UpdatedAt, t0+5)
		}
	}
	if c := counts(t, w); c.Sending != 4 || c.Pending != 3 || c.Total() != 7 || c.PayloadBytes != 14 {
		t.Fatalf("counts %+v", c)
	}
	var listed []Row
	_ = w.View(func(tx *ReadTx) error {
		s := StatusSending
		var err error
		listed, err = tx.List(&s, 2, 2)
		return err
	})
	if got := ids(listed); !slices.Equal(got, []uint64{6, 8}) {
		t.Fatalf("list SENDING after 2, limit 2: %v", got)
	}
	mustUpdate(t, w, func(tx *Tx) error {
		n, err := tx.ResurrectSending(t0 + 7)
		if n != 4 {
			t.Errorf("resurrected %d, want 4", n)
		}
		return err
	})
	if runs := sendingRuns(t, w); len(runs) != 0 {
		t.Fatalf("runs after resurrect %v", runs)
	}
}

// TestClaimLeavesRowValue: a claim writes only the sending index; the row
// value (payload included) is not rewritten.
func TestClaimLeavesRowValue(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 2)
	var before []byte
	_ = w.View(func(tx *ReadTx) error { before = slices.Clone(tx.rows.Get(u64key(1))); return nil })
	claim(t, w, 1, t0+9)
	_ = w.View(func(tx *ReadTx) error {
		if after := tx.rows.Get(u64key(1)); !slices.Equal(before, after) {
			t.Errorf("claim rewrote the row: %x -> %x", before, after)
		}
		return nil
	})
	if r := getRow(t, w, 1); r.Status != StatusSending || r.UpdatedAt != t0+9 {
		t.Fatalf("row 1 = %+v", r)
	}
}

// TestSchema1FileReadAndUpgraded: a WAL written by schema 1 (SENDING in
// the row value, sending entries with empty values) opens, reads the same,
// is marked schema 2 by a read-write open, and its SENDING rows move on.
func TestSchema1FileReadAndUpgraded(t *testing.T) {
	w := openTest(t, newClock(t0))
	path := w.Path()
	appendN(t, w, 3)
	_ = w.Close()
	// Rewrite it as schema 1 would have left it after claiming row 2.
	tamper(t, path, func(btx *bolt.Tx) error {
		rows := btx.Bucket(bucketRows)
		v := slices.Clone(rows.Get(u64key(2)))
		v[1] = byte(StatusSending)
		binary.BigEndian.PutUint64(v[22:], uint64(t0+3)) // updated: the claim time
		if err := rows.Put(u64key(2), v); err != nil {
			return err
		}
		p := btx.Bucket(bucketPending)
		if err := p.Put(u64key(1), u64key(1)); err != nil {
			return err
		}
		if err := p.Put(u64key(3), u64key(3)); err != nil {
			return err
		}
		if err := btx.Bucket(bucketSending).Put(u64key(2), []byte{}); err != nil {
			return err
		}
		meta := btx.Bucket(bucketMeta)
		var c counters
		c.decode(meta.Get([]byte(metaCounters)))
		c.pending, c.sending = 2, 1
		if err := meta.Put([]byte(metaCounters), c.encode()); err != nil {
			return err
		}
		return putSchemaVersion(1)(btx)
	})
	ro, err := Open(Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of schema 1: %v", err)
	}
	_ = ro.View(func(tx *ReadTx) error {
		for _, p := range tx.Verify(0) {
			t.Errorf("schema 1 file: %s", p)
		}
		return nil
	})
	_ = ro.Close()

	w = openAt(t, path, newClock(t0))
	if r := getRow(t, w, 2); r.Status != StatusSending || r.UpdatedAt != t0+3 {
		t.Fatalf("row 2 = %+v", r)
	}
	_ = w.View(func(tx *ReadTx) error {
		if v := binary.BigEndian.Uint32(tx.meta.Get([]byte(metaSchemaVersion))); v != SchemaVersion {
			t.Errorf("schema version after read-write open: %d", v)
		}
		return nil
	})
	got := claim(t, w, 10, t0+4)
	if !slices.Equal(ids(got), []uint64{1, 3}) {
		t.Fatalf("claimed %v", ids(got))
	}
	mustUpdate(t, w, func(tx *Tx) error { return tx.Ack([]uint64{1, 2, 3}, 0, t0+5) })
	if c := counts(t, w); c.Total() != 0 || c.PayloadBytes != 0 {
		t.Fatalf("counts %+v", c)
	}
}
