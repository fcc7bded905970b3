package wal

import (
	"path/filepath"
	"slices"
	"testing"
)

// openClaimIDs opens path with lanes, gap-free ids given at claim (the
// CHECKPOINT delivery with lanes), checks consistency and closes it at
// the end of the test or when closeIt is called.
func openClaimIDs(t *testing.T, path string, clk *fakeClock, lanes ...string) (w *WAL, closeIt func()) {
	t.Helper()
	w, err := Open(Options{Path: path, Now: clk.Now, Lanes: lanes, SendOrderBatchIDs: true, GapFree: true})
	if err != nil {
		t.Fatalf("open with claim ids: %v", err)
	}
	closed := false
	closeIt = func() {
		if closed {
			return
		}
		closed = true
		checkConsistent(t, w)
		if err := w.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	t.Cleanup(closeIt)
	return w, closeIt
}

func rowBatchIDs(rows []Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.BatchID
	}
	return out
}

// consecutive reports whether ids are from, from+1, ...
func consecutive(ids []int64, from int64) bool {
	for i, id := range ids {
		if id != from+int64(i) {
			return false
		}
	}
	return true
}

// Ids are given in claim order, gap-free, none at append; a row sent and
// returned (Fail, Release, a restart, Unreceive) goes out again under
// its id, before any row without one, lowest id first.
func TestClaimIDsKeptUntilDelivered(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, closeIt := openClaimIDs(t, path, clk, "alarm")
	var next int64
	_ = w.View(func(tx *ReadTx) error { next = tx.NextBatchID(); return nil })
	appendLaned(t, w, "dddaa", 0)
	_ = w.View(func(tx *ReadTx) error {
		if tx.NextBatchID() != next {
			t.Errorf("append moved next_batch_id %d -> %d", next, tx.NextBatchID())
		}
		return nil
	})
	first := claim(t, w, 3, clk.MS())
	if got := payloads(first); !slices.Equal(got, []string{"a3", "a4", "d0"}) {
		t.Fatalf("first claim %v", got)
	}
	if got := rowBatchIDs(first); !consecutive(got, next) {
		t.Fatalf("first claim ids %v, want from %d on", got, next)
	}
	// a3 RECEIVED, a4 fails, d0 released; more rows arrive in the alarm lane.
	mustUpdate(t, w, func(tx *Tx) error {
		if err := tx.Receive([]uint64{first[0].ID}, clk.MS()); err != nil {
			return err
		}
		if _, err := tx.Fail([]uint64{first[1].ID}, true, 0, 0, "refused", clk.MS()); err != nil {
			return err
		}
		return tx.Release([]uint64{first[2].ID}, clk.MS())
	})
	appendLaned(t, w, "a", 5)
	second := claim(t, w, 10, clk.MS())
	if got := payloads(second); !slices.Equal(got, []string{"a4", "d0", "a5", "d1", "d2"}) {
		t.Fatalf("second claim %v: the rows sent before go first, then the lanes", got)
	}
	if got := rowBatchIDs(second); !slices.Equal(got[:2], []int64{next + 1, next + 2}) || !consecutive(got[2:], next+3) {
		t.Fatalf("second claim ids %v", got)
	}
	// The received row keeps its id through Receive; a restart returns
	// the SENDING rows to PENDING with theirs.
	var recv []int64
	_ = w.View(func(tx *ReadTx) error {
		return tx.ReceivedFunc(func(_ uint64, b int64, _ int64) bool { recv = append(recv, b); return true })
	})
	if !slices.Equal(recv, []int64{next}) {
		t.Fatalf("received ids %v, want [%d]", recv, next)
	}
	closeIt()
	w, _ = openClaimIDs(t, path, clk, "alarm")
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.ResurrectSending(clk.MS()); return err })
	mustUpdate(t, w, func(tx *Tx) error {
		return tx.Unreceive([]uint64{first[0].ID}, clk.MS())
	})
	appendLaned(t, w, "a", 6)
	third := claim(t, w, 10, clk.MS())
	if got := payloads(third); !slices.Equal(got, []string{"a3", "a4", "d0", "a5", "d1", "d2", "a6"}) {
		t.Fatalf("claim after a restart %v", got)
	}
	if got := rowBatchIDs(third); !consecutive(got, next) {
		t.Fatalf("claim after a restart ids %v: every row keeps its id, the new one the next", got)
	}
	mustUpdate(t, w, func(tx *Tx) error { return tx.Ack(ids(third), 0, clk.MS()) })
	_ = w.View(func(tx *ReadTx) error {
		if n := tx.ids.b.Stats().KeyN + tx.retry.Stats().KeyN; n != 0 {
			t.Errorf("claim_ids and claim_retry hold %d entries after every row was acked", n)
		}
		return nil
	})
}

// A row dropped before its first claim has no id the engine waits for:
// no stand-in. One dropped after it was sent gets a stand-in under its
// id, sent before any new id; so does a row that goes DEAD.
func TestClaimIDsStandInsOnlyForIDsSent(t *testing.T) {
	clk := newClock(t0)
	w, _ := openClaimIDs(t, filepath.Join(t.TempDir(), "wal.db"), clk, "alarm")
	appendLaned(t, w, "dd", 0)
	sent := claim(t, w, 1, clk.MS())
	mustUpdate(t, w, func(tx *Tx) error { return tx.Receive(ids(sent), clk.MS()) })
	appendLaned(t, w, "dd", 2)
	dead := claim(t, w, 1, clk.MS())
	mustUpdate(t, w, func(tx *Tx) error {
		_, err := tx.Fail(ids(dead), true, 0, 1, "refused", clk.MS())
		return err
	})
	mustUpdate(t, w, func(tx *Tx) error {
		_, _, _, err := tx.DropUnsent(DropLimits{MaxBytes: 1})
		return err
	})
	if c := counts(t, w); c.StandIns != 2 {
		t.Fatalf("stand-ins %d, want 2 (the row received and the DEAD one), counts %+v", c.StandIns, c)
	}
	appendLaned(t, w, "a", 4)
	rows := claim(t, w, 10, clk.MS())
	var gaps []int64
	for _, r := range rows[:2] {
		g, ok := ParseStandIn(r.Payload)
		if !ok || g.BatchID != r.BatchID {
			t.Fatalf("row %q under id %d is not its own stand-in", r.Payload, r.BatchID)
		}
		gaps = append(gaps, g.BatchID)
	}
	if want := []int64{sent[0].BatchID, dead[0].BatchID}; !slices.Equal(gaps, want) {
		t.Fatalf("stand-ins for %v, want %v", gaps, want)
	}
	if len(rows) != 3 || string(rows[2].Payload) != "a4" || rows[2].BatchID != dead[0].BatchID+1 {
		t.Fatalf("after the stand-ins: %v ids %v, want a4 under the next id", payloads(rows), rowBatchIDs(rows))
	}
}

// The mode stays with the file: opened later without lanes (or without
// SendOrderBatchIDs), rows still get their ids at claim, never the
// placeholder of their block.
func TestClaimIDsStayWithTheFile(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, closeIt := openClaimIDs(t, path, clk, "alarm")
	appendLaned(t, w, "da", 0)
	first := claim(t, w, 1, clk.MS())
	mustUpdate(t, w, func(tx *Tx) error { return tx.Ack(ids(first), 0, clk.MS()) })
	closeIt()
	w2, err := Open(Options{Path: path, Now: clk.Now, GapFree: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	appendN(t, w2, 2)
	rows := claim(t, w2, 10, clk.MS())
	if got := rowBatchIDs(rows); !consecutive(got, first[0].BatchID+1) {
		t.Fatalf("ids %v after reopening without lanes, want from %d on", got, first[0].BatchID+1)
	}
	checkConsistent(t, w2)
}
