package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedOpenForWrite: a read-write open (what `start` does) of a
// damaged file must not panic. It either works (damage below the B-tree)
// or fails with an error wrapping ErrDamaged that names the file and the
// salvage command.
func TestDamagedOpenForWrite(t *testing.T) {
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			path := buildFixture(t)
			d.apply(t, path)
			before, _ := os.ReadFile(path)
			w, err := Open(Options{Path: path})
			if err == nil {
				defer w.Close()
			}
			switch {
			case d.opens:
				if err != nil {
					t.Fatalf("open: %v, want success", err)
				}
			case d.noMeta:
				if !errors.Is(err, ErrNotWAL) && !errors.Is(err, ErrDamaged) {
					t.Fatalf("open: %v, want ErrNotWAL or ErrDamaged", err)
				}
				if !strings.Contains(err.Error(), SalvageCommand(path)) {
					t.Errorf("message %q does not name the salvage command", err)
				}
			default:
				if !errors.Is(err, ErrDamaged) {
					t.Fatalf("open: %v, want ErrDamaged", err)
				}
				for _, want := range []string{path, "edge-agent db salvage --db-path " + path + " --out "} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("message %q lacks %q", err, want)
					}
				}
				t.Logf("%v", err)
				if after, _ := os.ReadFile(path); string(after) != string(before) {
					t.Error("a refused open changed the file")
				}
			}
		})
	}
}

// TestDamagedVerify: `db verify` (a read-only WAL, Verify) reports each
// damaged fixture without panicking, and leaves the file as it was.
func TestDamagedVerify(t *testing.T) {
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			path := buildFixture(t)
			d.apply(t, path)
			before, _ := os.ReadFile(path)
			w, err := Open(Options{Path: path, ReadOnly: true})
			if d.noMeta {
				if !errors.Is(err, ErrNotWAL) {
					t.Fatalf("open: %v, want ErrNotWAL", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("open read-only: %v", err)
			}
			defer w.Close()
			problems, _, err := w.Verify(0)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			for _, p := range problems {
				t.Log(p)
			}
			if len(problems) == 0 {
				t.Fatal("verify found nothing")
			}
			if d.name == "row key byte flipped in order" && !strings.Contains(fmt.Sprint(problems), fmt.Sprintf("row %d:", (fixRows-fixBlock+1)^0x4000)) {
				t.Errorf("the row whose key was damaged is not reported")
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Error("verify changed the file")
			}
		})
	}
}

// TestSalvage copies each damaged fixture into a new file: the source is
// never modified, the copy verifies clean, holds every row that was
// readable with its ids, status and content, every position, and drains.
func TestSalvage(t *testing.T) {
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			path := buildFixture(t)
			orig := readAll(t, path)
			d.apply(t, path)
			before, _ := os.ReadFile(path)
			dst := filepath.Join(t.TempDir(), "salvaged.db")
			clk := newClock(t0 + 10_000)
			rep, err := Salvage(path, dst, SalvageOptions{Now: clk.Now})
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatal("salvage changed the source file")
			}
			if err != nil {
				t.Fatalf("salvage: %v", err)
			}
			t.Logf("copied %d %v, renumbered %v, bad %v, damage %v, positions %d, older state %v",
				rep.Copied(), rep.Rows, rep.Renumbered, rep.BadRows, rep.Damage, rep.Positions, rep.OlderState)
			got := readAll(t, dst)
			if d.noMeta {
				// No tree to walk: every row comes from the page scan, the
				// positions are lost.
				if rep.Copied() != fixRows || rep.Scanned != fixRows || len(got.rows) != fixRows || rep.Positions != 0 {
					t.Fatalf("copied %d, scanned %d, new file %d rows, %d positions", rep.Copied(), rep.Scanned, len(got.rows), rep.Positions)
				}
			} else if d.lostRows >= 0 {
				if lost := fixRows - rep.Copied(); lost != d.lostRows || len(got.rows) != rep.Copied() {
					t.Fatalf("copied %d rows (new file holds %d), want %d lost", rep.Copied(), len(got.rows), d.lostRows)
				}
				if len(rep.BadRows) != d.lostBlocks {
					t.Errorf("bad rows %v, want %d blocks", rep.BadRows, d.lostBlocks)
				}
				if fmt.Sprint(got.positions) != fmt.Sprint(orig.positions) || string(got.started) != "1" {
					t.Errorf("positions %v started %q, want %v", got.positions, got.started, orig.positions)
				}
			} else if len(rep.Damage) == 0 || rep.Scanned == 0 || rep.Copied() != rep.Scanned {
				// A truncated file: its root is gone, the rows on the pages
				// left come from the page scan.
				t.Fatalf("rows lost: damage %v, %d rows found by the page scan, %d copied", rep.Damage, rep.Scanned, rep.Copied())
			}
			// Every copied row is the original row: same batch id, content
			// and state (SENDING rows come back PENDING), and under the same
			// id unless its key was damaged.
			renumbered := map[uint64]bool{}
			for _, r := range rep.Renumbered {
				renumbered[r.NewID] = true
			}
			byBatch := map[int64]Row{}
			for _, r := range orig.rows {
				byBatch[r.BatchID] = r
			}
			for _, r := range got.rows {
				o, ok := byBatch[r.BatchID]
				if !ok {
					t.Fatalf("row %d batch %d is not an original row", r.ID, r.BatchID)
				}
				want := o.Status
				if want == StatusSending {
					want = StatusPending
				}
				// A truncated file can lose the pages of the state bucket
				// with the root: its rows come back PENDING (sent again,
				// never lost), since the blocks do not carry the status.
				lostState := d.lostRows < 0 && r.Status == StatusPending
				if string(r.Payload) != string(o.Payload) || (r.Status != want && !lostState) || (r.ID != o.ID && !renumbered[r.ID]) {
					t.Fatalf("row %+v, original %+v", r, o)
				}
			}
			if d.name == "row key byte flipped in order" || d.name == "row key byte flipped out of order" {
				if len(rep.Renumbered) != fixBlock {
					t.Fatalf("renumbered %v, want the rows of the block with the damaged key", rep.Renumbered)
				}
			}
			if rep.OlderState {
				t.Log("read the previous transaction's state")
			}
			// The copy opens for write (as start does) and drains.
			w := openAt(t, dst, clk)
			pending := counts(t, w).Pending
			rows := claim(t, w, fixRows, clk.MS())
			mustUpdate(t, w, func(tx *Tx) error { return tx.Ack(ids(rows), 0, clk.MS()) })
			if c := counts(t, w); len(rows) != pending || c.Pending != 0 || c.Sending != 0 {
				t.Fatalf("drained %d of %d pending rows; counts after %+v", len(rows), pending, c)
			}
			f, _ := appendN(t, w, 1)
			if f <= maxID(orig.rows) && !rep.OlderState {
				// (An older state cannot know the ids the lost commit used.)
				t.Fatalf("new row id %d reuses an id of the source", f)
			}
			if b := getRow(t, w, f).BatchID; b <= orig.rows[len(orig.rows)-1].BatchID {
				t.Fatalf("new batch id %d reuses a batch id of the source", b)
			}
		})
	}
}

type walContent struct {
	rows      []Row
	positions map[string]map[string][]byte
	started   []byte
}

func readAll(t *testing.T, path string) walContent {
	t.Helper()
	w, err := Open(Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := walContent{positions: map[string]map[string][]byte{}}
	err = w.View(func(tx *ReadTx) error {
		var err error
		if c.rows, err = tx.List(nil, 0, 0); err != nil {
			return err
		}
		srcs, err := tx.Sources()
		if err != nil {
			return err
		}
		for _, s := range srcs {
			if c.positions[s], err = tx.Positions(s); err != nil {
				return err
			}
		}
		c.started, err = tx.Meta("input_started:app")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func maxID(rows []Row) uint64 {
	var m uint64
	for _, r := range rows {
		m = max(m, r.ID)
	}
	return m
}
