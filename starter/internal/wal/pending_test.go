package wal

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPendingRuns adds ids in random order and takes from the front,
// checking the runs against a plain set: same ids, and runs always
// maximal (touching runs are merged).
func TestPendingRuns(t *testing.T) {
	w := openTest(t, nil)
	rng := rand.New(rand.NewPCG(7, 7))
	set := map[uint64]bool{}
	check := func(step int) {
		t.Helper()
		_ = w.View(func(tx *ReadTx) error {
			var want []uint64
			for id := range set {
				want = append(want, id)
			}
			slices.Sort(want)
			if got := tx.pend.ids(0, 0); !slices.Equal(got, want) {
				t.Fatalf("step %d: ids %v, want %v", step, got, want)
			}
			runs, maximal := 0, 0
			tx.pend.each(func(run, bool) bool { runs++; return true })
			for i, id := range want {
				if i == 0 || want[i-1]+1 != id {
					maximal++
				}
			}
			if runs != maximal {
				t.Fatalf("step %d: %d runs for %d maximal runs", step, runs, maximal)
			}
			for id := uint64(0); id < 70; id++ {
				if tx.pend.contains(id) != set[id] {
					t.Fatalf("step %d: contains(%d) = %v", step, id, !set[id])
				}
			}
			return nil
		})
	}
	for step := 0; step < 300; step++ {
		_ = w.Update(func(tx *Tx) error {
			if rng.IntN(4) == 0 {
				got, err := tx.pendTake(pendSource{x: tx.pend.index}, rng.IntN(6))
				for _, id := range got {
					delete(set, id)
				}
				return err
			}
			id := 1 + uint64(rng.IntN(60))
			set[id] = true
			return tx.pend.add(run{start: id, end: id})
		})
		check(step)
	}
	// The test wrote the index without rows; empty it so the cleanup
	// consistency check sees a clean file.
	_ = w.Update(func(tx *Tx) error { _, err := tx.pendTake(pendSource{x: tx.pend.index}, 1<<20); return err })
}
