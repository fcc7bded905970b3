package wal

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock for Options.Now.
type fakeClock struct{ ms atomic.Int64 }

func newClock(ms int64) *fakeClock {
	c := &fakeClock{}
	c.ms.Store(ms)
	return c
}
func (c *fakeClock) Now() time.Time    { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) Add(d int64) int64 { return c.ms.Add(d) }
func (c *fakeClock) MS() int64         { return c.ms.Load() }

const t0 = int64(1_700_000_000_000)

// openTest opens a WAL in a fresh temp dir (fsync off: these tests are
// about logic, the crash test covers durability) and checks consistency
// when the test ends.
func openTest(t testing.TB, clk *fakeClock) *WAL {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "data", "wal.db"), clk)
}

func openAt(t testing.TB, path string, clk *fakeClock) *WAL {
	t.Helper()
	opts := Options{Path: path}
	if clk != nil {
		opts.Now = clk.Now
	}
	w, err := Open(opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		checkConsistent(t, w)
		if err := w.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return w
}

// checkConsistent runs Verify (bbolt tx.Check, checksums, indexes,
// counters) and fails the test on any problem.
func checkConsistent(t testing.TB, w *WAL) {
	t.Helper()
	err := w.View(func(tx *ReadTx) error {
		for _, p := range tx.Verify(20) {
			t.Errorf("consistency: %s", p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("consistency view: %v", err)
	}
}

func mustUpdate(t testing.TB, w *WAL, fn func(tx *Tx) error) {
	t.Helper()
	if err := w.Update(fn); err != nil {
		t.Fatalf("update: %v", err)
	}
}

func appendN(t testing.TB, w *WAL, n int) (first, last uint64) {
	t.Helper()
	rows := make([]NewRow, n)
	for i := range rows {
		rows[i] = NewRow{SourceID: "src", Payload: []byte{byte(i), 'x'}}
	}
	mustUpdate(t, w, func(tx *Tx) error {
		var err error
		first, last, err = tx.Append(rows)
		return err
	})
	return first, last
}

func claim(t testing.TB, w *WAL, max int, now int64) []Row {
	t.Helper()
	var rows []Row
	mustUpdate(t, w, func(tx *Tx) error {
		var err error
		rows, err = tx.Claim(max, now)
		return err
	})
	return rows
}

func ids(rows []Row) []uint64 {
	out := make([]uint64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func getRow(t testing.TB, w *WAL, id uint64) Row {
	t.Helper()
	var r Row
	var ok bool
	err := w.View(func(tx *ReadTx) error {
		var err error
		r, ok, err = tx.Get(id)
		return err
	})
	if err != nil || !ok {
		t.Fatalf("get %d: ok=%v err=%v", id, ok, err)
	}
	return r
}

func counts(t testing.TB, w *WAL) Counts {
	t.Helper()
	var c Counts
	if err := w.View(func(tx *ReadTx) error { c = tx.Counts(); return nil }); err != nil {
		t.Fatal(err)
	}
	return c
}
