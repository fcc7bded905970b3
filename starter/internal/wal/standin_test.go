package wal

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// openGapFree opens a WAL at path with Options.GapFree set as said.
func openGapFree(t testing.TB, path string, clk *fakeClock, gapFree bool) *WAL {
	t.Helper()
	w, err := Open(Options{Path: path, Now: clk.Now, GapFree: gapFree})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		checkConsistent(t, w)
		_ = w.Close()
	})
	return w
}

// standIns returns the stand-in rows of w, by id.
func standIns(t testing.TB, w *WAL) []Row {
	t.Helper()
	var out []Row
	err := w.View(func(tx *ReadTx) error {
		rows, err := tx.List(nil, 0, 0)
		for _, r := range rows {
			if r.StandIn {
				out = append(out, r)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStandIns: every way a row leaves undelivered gets a stand-in with
// its batch id, source and the documented payload, with GapFree; without
// it, none.
func TestStandIns(t *testing.T) {
	cases := []struct {
		name string
		// leave makes row 2 (of rows 1..3, created at t0) leave
		// undelivered at t0+1000.
		// It returns the WAL to go on with.
		leave      func(t *testing.T, w *WAL, gapFree bool) *WAL
		reason     string
		gapRowsFor []uint64 // the rows that get a stand-in, in order
	}{
		{"drop by age", func(t *testing.T, w *WAL, _ bool) *WAL {
			mustUpdate(t, w, func(tx *Tx) error { _, _, _, err := tx.DropUnsent(DropLimits{OlderThanMS: t0 + 1}); return err })
			return w
		}, GapDroppedAge, []uint64{1, 2, 3}},
		{"drop when full", func(t *testing.T, w *WAL, _ bool) *WAL {
			mustUpdate(t, w, func(tx *Tx) error { _, _, _, err := tx.DropUnsent(DropLimits{MaxBytes: 1}); return err })
			return w
		}, GapDroppedFull, []uint64{1, 2, 3}},
		{"drop of a RECEIVED row", func(t *testing.T, w *WAL, _ bool) *WAL {
			claim(t, w, 3, t0)
			mustUpdate(t, w, func(tx *Tx) error {
				if err := tx.Receive([]uint64{2}, t0); err != nil {
					return err
				}
				if err := tx.Ack([]uint64{1, 3}, 0, t0); err != nil {
					return err
				}
				_, _, _, err := tx.DropUnsent(DropLimits{OlderThanMS: t0 + 1})
				return err
			})
			return w
		}, GapDroppedAge, []uint64{2}},
		{"dead at max attempts", func(t *testing.T, w *WAL, _ bool) *WAL {
			claim(t, w, 3, t0)
			mustUpdate(t, w, func(tx *Tx) error {
				_, err := tx.Fail([]uint64{2}, true, t0, 1, "SCHEMA", t0+1000)
				return err
			})
			return w
		}, GapDeadPrefix + "SCHEMA", []uint64{2}},
		{"quarantined for a bad block", func(t *testing.T, w *WAL, gapFree bool) *WAL {
			path := w.Path()
			_ = w.Close()
			tamper(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketBlocks).Bucket(u64key(1))
				v := append([]byte(nil), b.Get(blockValueKey)...)
				v[len(v)-1] ^= 0xff
				return b.Put(blockValueKey, v)
			})
			w = openGapFree(t, path, newClock(t0+1000), gapFree)
			claim(t, w, 1, t0+1000)
			return w
		}, GapDeadPrefix + ReasonChecksum, []uint64{1, 2, 3}},
	}
	for _, tc := range cases {
		for _, gapFree := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "", false: " without GapFree"}[gapFree], func(t *testing.T) {
				clk := newClock(t0)
				w := openGapFree(t, filepath.Join(t.TempDir(), "wal.db"), clk, gapFree)
				var batches []int64
				mustUpdate(t, w, func(tx *Tx) error {
					first, last, err := tx.Append([]NewRow{{SourceID: "a", Payload: []byte("1")}, {SourceID: "b", Payload: []byte("2")}, {SourceID: "c", Payload: []byte("3")}})
					for id := first; id <= last; id++ {
						batches = append(batches, tx.NextBatchID()-int64(last-id)-1)
					}
					return err
				})
				next := batches[2] + 1
				clk.Add(1000)
				w = tc.leave(t, w, gapFree)
				got := standIns(t, w)
				if !gapFree {
					if len(got) != 0 {
						t.Fatalf("stand-ins without GapFree: %+v", got)
					}
					return
				}
				if len(got) != len(tc.gapRowsFor) {
					t.Fatalf("%d stand-ins, want %d: %+v", len(got), len(tc.gapRowsFor), got)
				}
				for i, r := range got {
					orig := tc.gapRowsFor[i]
					g, ok := ParseStandIn(r.Payload)
					wantGap := Gap{BatchID: batches[orig-1], Source: string(rune('a' + orig - 1)), Reason: tc.reason, CreatedMS: t0}
					if !ok || g != wantGap || r.BatchID != g.BatchID || r.SourceID != g.Source || r.Status != StatusPending || r.ID <= 3 {
						t.Fatalf("stand-in %+v (%+v), want %+v", r, g, wantGap)
					}
					if i == 0 && !strings.HasPrefix(string(r.Payload), `{"edge_agent_gap":{"batch_id":`) {
						t.Fatalf("payload %s", r.Payload)
					}
				}
				var c Counts
				var nextBatch int64
				_ = w.View(func(tx *ReadTx) error { c, nextBatch = tx.Counts(), tx.NextBatchID(); return nil })
				if c.StandIns != int64(len(got)) || nextBatch != next {
					t.Fatalf("counts %+v, next batch %d want %d (stand-ins allocate none)", c, nextBatch, next)
				}
				// The stand-ins go out like any row.
				if sent := claim(t, w, 10, t0+2000); len(sent) < len(got) {
					t.Fatalf("claimed %v", ids(sent))
				}
			})
		}
	}
}

// TestStandInRules: a stand-in is never dropped and never goes DEAD by
// Fail; a DEAD row with a stand-in gets no second one when purged, one
// without gets one.
func TestStandInRules(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w, 2)
	claim(t, w, 1, t0)
	// Row 1 goes DEAD before GapFree: no stand-in.
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.Fail([]uint64{1}, true, t0, 1, "x", t0); return err })
	_ = w.Close()
	w = openGapFree(t, path, clk, true)
	mustUpdate(t, w, func(tx *Tx) error { _, _, _, err := tx.DropUnsent(DropLimits{OlderThanMS: t0 + 1}); return err })
	si := standIns(t, w)
	if len(si) != 1 || getRow(t, w, 1).Status != StatusDead {
		t.Fatalf("stand-ins %+v", si)
	}
	// Dropping never takes a stand-in, however full or old.
	clk.Add(10_000)
	mustUpdate(t, w, func(tx *Tx) error {
		full, age, _, err := tx.DropUnsent(DropLimits{OlderThanMS: t0 + 100_000, MaxBytes: 1})
		if full.Rows+age.Rows != 0 {
			t.Errorf("dropped %+v %+v", full, age)
		}
		return err
	})
	// Failing it at the limit backs it off instead.
	sent := claim(t, w, 10, clk.MS())
	if len(sent) != 1 || !sent[0].StandIn {
		t.Fatalf("claimed %+v", sent)
	}
	mustUpdate(t, w, func(tx *Tx) error {
		dead, err := tx.Fail(ids(sent), true, clk.MS()+500, 1, "busy", clk.MS())
		if dead != 0 {
			t.Errorf("%d DEAD", dead)
		}
		return err
	})
	if r := getRow(t, w, sent[0].ID); r.Status != StatusPending || r.NotBefore != clk.MS()+500 || r.Attempts != 1 {
		t.Fatalf("failed stand-in %+v", r)
	}
	// Purging row 1, DEAD without a stand-in, makes one; a row that got
	// one when it went DEAD gets no second.
	batch1 := getRow(t, w, 1).BatchID
	mustUpdate(t, w, func(tx *Tx) error {
		n, err := tx.PurgeDead()
		if n != 1 {
			t.Errorf("purged %d", n)
		}
		return err
	})
	si = standIns(t, w)
	if len(si) != 2 {
		t.Fatalf("stand-ins after purge: %+v", si)
	}
	if g, _ := ParseStandIn(si[1].Payload); g.Reason != GapPurged || si[1].BatchID != batch1 || g.BatchID != batch1 {
		t.Fatalf("purge stand-in %+v", g)
	}
	appendN(t, w, 1)
	rows := claim(t, w, 10, clk.MS()+1000)
	var normal uint64
	for _, r := range rows {
		if !r.StandIn {
			normal = r.ID
		}
	}
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.Fail([]uint64{normal}, true, 0, 1, "x", clk.MS()); return err })
	before := len(standIns(t, w))
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.PurgeDead(); return err })
	if after := len(standIns(t, w)); after != before {
		t.Fatalf("purge of a DEAD row that had a stand-in made another: %d -> %d", before, after)
	}
}

// TestStandInBlocks: stand-ins with consecutive batch ids share a block,
// others start a new one; AckReceivedThrough acks RECEIVED stand-ins by
// their own (older) batch ids, not by their place among the row ids.
func TestStandInBlocks(t *testing.T) {
	clk := newClock(t0)
	w := openGapFree(t, filepath.Join(t.TempDir(), "wal.db"), clk, true)
	appendN(t, w, 6)
	claim(t, w, 6, t0)
	// Rows 2, 3 and 5 go DEAD: stand-ins 7, 8 (batch ids consecutive)
	// and 9 (not).
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.Fail([]uint64{2, 3, 5}, true, t0, 1, "x", t0); return err })
	var blocks []uint64
	_ = w.View(func(tx *ReadTx) error {
		c := tx.blocks.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			id, _ := keyID(k)
			blocks = append(blocks, id)
		}
		return nil
	})
	if !slices.Equal(blocks, []uint64{1, 7, 9}) {
		t.Fatalf("blocks %v, want 1, 7 (stand-ins for 2, 3) and 9 (for 5)", blocks)
	}
	b := func(id uint64) int64 { return getRow(t, w, id).BatchID }
	if b(7) != b(2) || b(8) != b(3) || b(9) != b(5) {
		t.Fatalf("stand-in batch ids %d %d %d", b(7), b(8), b(9))
	}
	appendN(t, w, 2) // rows 10, 11
	claim(t, w, 10, t0)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Receive([]uint64{1, 4, 6, 7, 8, 9, 10, 11}, t0) })
	if runs := receivedRuns(t, w); len(runs) < 4 {
		t.Fatalf("received runs %v: stand-ins must not join their neighbours' runs", runs)
	}
	// DEAD rows, stand-ins below next_batch_id, RECEIVED stand-ins: clean.
	if probs, c, err := w.Verify(0); err != nil || len(probs) != 0 || c.Received != 8 || c.Dead != 3 || c.StandIns != 3 {
		t.Fatalf("verify: %v %+v %v", probs, c, err)
	}
	cases := []struct {
		watermark int64
		acked     []uint64
	}{
		{b(1), []uint64{1}},
		{b(3), []uint64{7, 8}},
		{b(6), []uint64{4, 6, 9}},
		{b(11), []uint64{10, 11}},
	}
	for _, tc := range cases {
		before, _ := receivedIDs(t, w)
		var n int
		mustUpdate(t, w, func(tx *Tx) error {
			var err error
			n, err = tx.AckReceivedThrough(tc.watermark, time.Hour, t0)
			return err
		})
		after, _ := receivedIDs(t, w)
		var gone []uint64
		for _, id := range before {
			if !slices.Contains(after, id) {
				gone = append(gone, id)
			}
		}
		if n != len(tc.acked) || !slices.Equal(gone, tc.acked) {
			t.Fatalf("watermark %d: acked %d %v, want %v", tc.watermark, n, gone, tc.acked)
		}
	}
}

// TestSalvageStandIns: a salvaged stand-in is still one.
func TestSalvageStandIns(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path, Now: clk.Now, GapFree: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w, 4)
	claim(t, w, 1, t0)
	// Row 1 goes DEAD with a stand-in; the copy must know it has one.
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.Fail([]uint64{1}, true, t0, 1, "x", t0); return err })
	mustUpdate(t, w, func(tx *Tx) error { _, _, _, err := tx.DropUnsent(DropLimits{OlderThanMS: t0 + 1}); return err })
	_ = w.Close()
	dst := filepath.Join(t.TempDir(), "salvaged.db")
	if _, err := Salvage(path, dst, SalvageOptions{Now: clk.Now}); err != nil {
		t.Fatal(err)
	}
	out := openGapFree(t, dst, clk, true)
	si := standIns(t, out)
	if len(si) != 4 {
		t.Fatalf("stand-ins in the copy: %+v", si)
	}
	mustUpdate(t, out, func(tx *Tx) error { _, err := tx.PurgeDead(); return err })
	if n := len(standIns(t, out)); n != 4 {
		t.Fatalf("purging the copy's DEAD row, which had a stand-in, made another: %d", n)
	}
	mustUpdate(t, out, func(tx *Tx) error {
		full, _, _, err := tx.DropUnsent(DropLimits{MaxBytes: 1})
		if full.Rows != 0 {
			t.Errorf("dropped salvaged stand-ins: %+v", full)
		}
		return err
	})
}

// TestSalvageKeepsNextBatchID: the copy goes on with the id after the
// source's last, not with a new file's clock-seeded one. A jump would leave
// a gap under CHECKPOINT delivery's watermark, which only passes
// consecutive ids, and new rows would never be confirmed.
func TestSalvageKeepsNextBatchID(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path, Now: clk.Now, GapFree: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w, 4)
	var next int64
	_ = w.View(func(tx *ReadTx) error { next = tx.NextBatchID(); return nil })
	_ = w.Close()
	later := newClock(t0 + 3_600_000)
	dst := filepath.Join(t.TempDir(), "salvaged.db")
	if _, err := Salvage(path, dst, SalvageOptions{Now: later.Now}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(Options{Path: dst, Now: later.Now, GapFree: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got int64
	_ = c.View(func(tx *ReadTx) error { got = tx.NextBatchID(); return nil })
	if got != next {
		t.Fatalf("salvaged next_batch_id %d, want the source's %d", got, next)
	}
}
