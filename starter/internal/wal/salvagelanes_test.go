package wal

import (
	"path/filepath"
	"slices"
	"testing"
)

// Salvage keeps each row's lane: the copy, opened with the same lanes,
// is claimed alarm rows first, then debug, then the default lane, in
// append order within each, as the source would have been; a row the
// source had sent and got back keeps its lane too. A lane the agent's
// config no longer names folds into the default lane at its next open.
func TestSalvageKeepsLanes(t *testing.T) {
	clk := newClock(t0)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "wal.db"), filepath.Join(dir, "copy.db")
	w, closeIt := openLanes(t, src, clk, "alarm", "debug")
	in := appendLaned(t, w, "dxaddaxd", 0)
	in = append(in, appendLaned(t, w, "axdda", len(in))...)
	// Two alarm rows go out and come back unsent: PENDING in their lane.
	sent := claim(t, w, 2, clk.MS())
	mustUpdate(t, w, func(tx *Tx) error {
		_, err := tx.Fail(tx.SendingIDs(), true, clk.MS(), 10, "test", clk.MS())
		return err
	})
	if got := payloads(sent); !slices.Equal(got, only(in, 'a')[:2]) {
		t.Fatalf("claimed %v, want the first two alarm rows", got)
	}
	closeIt()

	rep, err := Salvage(src, dst, SalvageOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows[StatusPending] != len(in) {
		t.Fatalf("copied %v, want %d PENDING rows", rep.Rows, len(in))
	}
	c, closeCopy := openLanes(t, dst, clk, "alarm", "debug")
	got := payloads(claim(t, c, 100, clk.MS()))
	want := append(append(only(in, 'a'), only(in, 'x')...), only(in, 'd')...)
	if !slices.Equal(got, want) {
		t.Fatalf("copy claimed %v, want lane by lane %v", got, want)
	}
	closeCopy()

	// The config now names only alarm: debug rows join the default lane.
	rep, err = Salvage(src, filepath.Join(dir, "copy2.db"), SalvageOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := openLanes(t, filepath.Join(dir, "copy2.db"), clk, "alarm")
	got = payloads(claim(t, c2, 100, clk.MS()))
	var rest []string
	for _, p := range in {
		if p[0] != 'a' {
			rest = append(rest, p)
		}
	}
	if want := append(only(in, 'a'), rest...); !slices.Equal(got, want) {
		t.Fatalf("copy opened with alarm only claimed %v, want %v", got, want)
	}
}
