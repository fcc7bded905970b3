package wal

import (
	"slices"
	"testing"
)

// sendingRuns lists the sending index as [start, end] pairs.
func sendingRuns(t *testing.T, w *WAL) [][2]uint64 {
	t.Helper()
	var out [][2]uint64
	_ = w.View(func(tx *ReadTx) error {
		tx.send.each(func(r run, ok bool) bool {
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

// TestClaimLeavesRowValue: a claim writes only the sending index; the
// block (payload included) is not rewritten and no row state is written.
func TestClaimLeavesRowValue(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 2)
	var before []byte
	_ = w.View(func(tx *ReadTx) error { before = slices.Clone(getBlock(tx.blocks, u64key(1))); return nil })
	claim(t, w, 1, t0+9)
	_ = w.View(func(tx *ReadTx) error {
		if after := getBlock(tx.blocks, u64key(1)); !slices.Equal(before, after) {
			t.Errorf("claim rewrote the block: %x -> %x", before, after)
		}
		if k, _ := tx.state.Cursor().First(); k != nil {
			t.Errorf("claim wrote a row state for %x", k)
		}
		return nil
	})
	if r := getRow(t, w, 1); r.Status != StatusSending || r.UpdatedAt != t0+9 {
		t.Fatalf("row 1 = %+v", r)
	}
}
