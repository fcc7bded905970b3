package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func batchIDs(t *testing.T, w *WAL, n int) []int64 {
	t.Helper()
	first, last := appendN(t, w, n)
	var out []int64
	for id := first; id <= last; id++ {
		out = append(out, getRow(t, w, id).BatchID)
	}
	return out
}

func TestBatchIDsMonotonicAcrossReopenAndRecreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	clk := newClock(t0)
	w, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	a := batchIDs(t, w, 3)
	if a[0] != t0*1000 || a[1] != a[0]+1 || a[2] != a[1]+1 {
		t.Fatalf("first ids %v, want seeded from clock %d", a, t0*1000)
	}
	checkConsistent(t, w)
	_ = w.Close()

	w = openAt(t, path, clk)
	b := batchIDs(t, w, 2)
	if b[0] != a[2]+1 {
		t.Fatalf("after reopen %v, want to continue after %d", b, a[2])
	}
	var next int64
	_ = w.View(func(tx *ReadTx) error { next = tx.NextBatchID(); return nil })
	if next != b[1]+1 {
		t.Fatalf("next batch id %d", next)
	}
	_ = w.Close()

	// Deleting the file: the clock seed keeps ids increasing.
	_ = os.Remove(path)
	clk.Add(1)
	w2 := openAt(t, path, clk)
	c := batchIDs(t, w2, 1)
	if c[0] <= b[1] {
		t.Fatalf("after recreate %d <= %d", c[0], b[1])
	}
}

func TestBatchIDPositiveWithZeroClock(t *testing.T) {
	w := openTest(t, newClock(0))
	if ids := batchIDs(t, w, 2); ids[0] <= 0 || ids[1] <= ids[0] {
		t.Fatalf("ids %v", ids)
	}
}

func TestSecondOpenerRefusedQuickly(t *testing.T) {
	w := openTest(t, nil)
	start := time.Now()
	_, err := Open(Options{Path: w.Path(), LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("err = %v, want ErrLocked", err)
	}
	if want := "another edge-agent is using " + w.Path(); !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q lacks %q", err, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestOpenRejectsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.db")
	_ = os.WriteFile(text, []byte("hello, this is not a database\n"), 0o600)
	big := filepath.Join(dir, "big.db")
	_ = os.WriteFile(big, []byte(strings.Repeat("garbage!", 4096)), 0o600)
	foreign := filepath.Join(dir, "foreign.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err })
	_ = db.Close()
	for _, p := range []string{text, big, foreign} {
		for _, ro := range []bool{false, true} {
			before, _ := os.ReadFile(p)
			_, err := Open(Options{Path: p, ReadOnly: ro})
			if !errors.Is(err, ErrNotWAL) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s ro=%v: err = %v, want ErrNotWAL naming the path", filepath.Base(p), ro, err)
			}
			if after, _ := os.ReadFile(p); string(after) != string(before) {
				t.Errorf("%s ro=%v: file was modified", filepath.Base(p), ro)
			}
		}
	}
}

// tamper edits a closed WAL file directly through bbolt, bypassing every
// invariant the package keeps, to build the damaged files tests need.
func tamper(t testing.TB, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

func putSchemaVersion(v uint32) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b := make([]byte, 4)
		binary.BigEndian.PutUint32(b, v)
		return tx.Bucket(bucketMeta).Put([]byte(metaSchemaVersion), b)
	}
}

func TestOpenRejectsUnknownSchemaVersion(t *testing.T) {
	w := openTest(t, nil)
	path := w.Path()
	_ = w.Close()
	tamper(t, path, putSchemaVersion(SchemaVersion+1))
	// Schema 1 (never released) kept SENDING in the row: refused, not
	// half-read.
	for _, ro := range []bool{false, true} {
		if _, err := Open(Options{Path: path, ReadOnly: ro}); !errors.Is(err, ErrSchemaVersion) {
			t.Errorf("ro=%v: err = %v, want ErrSchemaVersion", ro, err)
		}
	}
	tamper(t, path, putSchemaVersion(1))
	for _, ro := range []bool{false, true} {
		if _, err := Open(Options{Path: path, ReadOnly: ro}); !errors.Is(err, ErrSchemaVersion) {
			t.Errorf("schema 1, ro=%v: err = %v, want ErrSchemaVersion", ro, err)
		}
	}
	// Put it back so the cleanup consistency check can open it.
	tamper(t, path, putSchemaVersion(SchemaVersion))
}

// TestOpenRefusesSchema2: a file of schema 2 (one key per row, written
// only by builds before the first release) is refused by every open and
// by salvage, with an error that says which version the file has, which
// this build reads and what to do, and is left as it was. Its indexes
// name rows no block holds: that must not be taken for damage.
func TestOpenRefusesSchema2(t *testing.T) {
	path := buildFixture(t)
	tamper(t, path, func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketBlocks); err != nil {
			return err
		}
		if _, err := tx.CreateBucket([]byte("rows")); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bucketBlocks); err != nil {
			return err
		}
		return putSchemaVersion(2)(tx)
	})
	before, _ := os.ReadFile(path)
	for _, ro := range []bool{false, true} {
		_, err := Open(Options{Path: path, ReadOnly: ro})
		if !errors.Is(err, ErrSchemaVersion) {
			t.Fatalf("ro=%v: err = %v, want ErrSchemaVersion", ro, err)
		}
		for _, want := range []string{path, "schema version 2", "reads only version 4", "move the file aside"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ro=%v: error %q lacks %q", ro, err, want)
			}
		}
	}
	_, err := Salvage(path, filepath.Join(t.TempDir(), "out.db"), SalvageOptions{})
	if !errors.Is(err, ErrSchemaVersion) || !strings.Contains(err.Error(), "schema version 2") {
		t.Fatalf("salvage: %v, want ErrSchemaVersion", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused open changed the file")
	}
}

func TestReadOnlyNeverCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "wal.db")
	if _, err := Open(Options{Path: path, ReadOnly: true}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only open created %s", filepath.Dir(path))
	}
	w := openAt(t, path, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Update(func(*Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("update on read-only: %v", err)
	}
}

// TestReadsBesideCommits: the agent's own WAL serves reads (the db API)
// while its loop commits; every read sees one committed state.
func TestReadsBesideCommits(t *testing.T) {
	w := openTest(t, nil)
	// The writer commits until the reads are done, and at most
	// maxCommits times or for maxWriting: a bound that ends the commits
	// early leaves the reads still right, so it cannot fail the test.
	const (
		maxCommits = 100_000
		maxWriting = time.Minute
	)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		deadline := time.Now().Add(maxWriting)
		for i := 0; i < maxCommits && !stop.Load() && time.Now().Before(deadline); i++ {
			_ = w.Update(func(tx *Tx) error {
				if _, _, err := tx.Append(make([]NewRow, 50)); err != nil {
					return err
				}
				rows, err := tx.Claim(40, time.Now().UnixMilli())
				if err != nil {
					return err
				}
				return tx.Ack(ids(rows), 0, time.Now().UnixMilli())
			})
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	for range 200 {
		err := w.View(func(tx *ReadTx) error {
			c := tx.Counts()
			rows, err := tx.List(nil, 0, 0)
			if err != nil {
				return err
			}
			if len(rows) != c.Total() {
				t.Errorf("read saw %d rows, counters say %d", len(rows), c.Total())
			}
			return nil
		})
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
}

// TestOneProcessAtATime: a bbolt file is open in one process at a time,
// so a read-only open of the file an agent holds fails with ErrLocked
// (db then asks the agent), and an agent cannot start while a reader
// holds it. No lock files are left beside the WAL.
func TestOneProcessAtATime(t *testing.T) {
	w := openTest(t, nil)
	_, err := Open(Options{Path: w.Path(), ReadOnly: true, LockTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another edge-agent is using "+w.Path()) {
		t.Fatalf("read-only open beside the agent: %v, want ErrLocked", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(Options{Path: w.Path(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := Open(Options{Path: w.Path(), LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("read-write open beside a reader: %v, want ErrLocked", err)
	}
	entries, err := os.ReadDir(filepath.Dir(w.Path()))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(w.Path()) {
			t.Errorf("left beside the WAL: %s", e.Name())
		}
	}
}

func TestChecksumFailureMovesRowToDead(t *testing.T) {
	w := openTest(t, newClock(t0))
	path := w.Path()
	appendN(t, w, 1)
	appendN(t, w, 1) // row 2 is a block of its own
	appendN(t, w, 1)
	_ = w.Close()
	// Flip one payload byte of row 2's block directly through bbolt.
	tamper(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBlocks).Bucket(u64key(2))
		v := append([]byte(nil), b.Get(blockValueKey)...)
		v[len(v)-1] ^= 0xff
		return b.Put(blockValueKey, v)
	})
	w = openAt(t, path, newClock(t0))
	var problems []Problem
	_ = w.View(func(tx *ReadTx) error { problems = tx.Verify(0); return nil })
	if len(problems) != 1 || problems[0].RowID != 2 || !strings.Contains(problems[0].What, "checksum") {
		t.Fatalf("verify before claim: %v", problems)
	}
	got := claim(t, w, 10, t0)
	if len(got) != 2 || got[0].ID != 1 || got[1].ID != 3 {
		t.Fatalf("claimed %v, want 1 and 3", ids(got))
	}
	r := getRow(t, w, 2)
	if r.Status != StatusDead || r.Reason != ReasonChecksum {
		t.Fatalf("row 2 = %+v", r)
	}
	if c := counts(t, w); c.ChecksumFailures != 1 || c.Dead != 1 || c.Sending != 2 {
		t.Fatalf("counts %+v", c)
	}
	// Retried by an operator, it fails again instead of being sent.
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.RetryDead(t0); return err })
	if got := claim(t, w, 10, t0); len(got) != 0 {
		t.Fatalf("corrupt row claimed after retry: %v", ids(got))
	}
}

func TestUndecodableRowQuarantined(t *testing.T) {
	w := openTest(t, newClock(t0))
	path := w.Path()
	appendN(t, w, 1)
	appendN(t, w, 1)
	_ = w.Close()
	tamper(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBlocks).Bucket(u64key(1)).Put(blockValueKey, []byte("garbage"))
	})
	w = openAt(t, path, newClock(t0))
	got := claim(t, w, 10, t0)
	if len(got) != 1 || got[0].ID != 2 {
		t.Fatalf("claimed %v", ids(got))
	}
	r := getRow(t, w, 1)
	if r.Status != StatusDead || !strings.HasPrefix(r.Reason, reasonUndecodable) || r.Payload != nil {
		t.Fatalf("row 1 = %+v", r)
	}
	// The payload bytes of a block whose table is gone are unknown; purge
	// it so the cleanup consistency check compares clean counters.
	mustUpdate(t, w, func(tx *Tx) error {
		_, err := tx.PurgeDead()
		tx.ctr.payloadBytes = 2 // the one remaining row
		return err
	})
}

func TestCompactCopiesEverything(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 100)
	claim(t, w, 60, t0)
	mustUpdate(t, w, func(tx *Tx) error {
		if err := tx.Ack(seq(1, 50), 0, t0); err != nil {
			return err
		}
		return tx.SavePositions([]PositionUpdate{{SourceID: "s", Key: "k", State: []byte("v")}})
	})
	dst := filepath.Join(t.TempDir(), "compact.db")
	if err := w.Compact(dst); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(dst); err == nil {
		t.Fatal("compact overwrote an existing file")
	}
	c2 := openAt(t, dst, newClock(t0))
	if a, b := counts(t, w), counts(t, c2); a != b {
		t.Fatalf("counts differ: %+v vs %+v", a, b)
	}
	// Ids continue where the original stopped.
	if f, _ := appendN(t, c2, 1); f != 101 {
		t.Fatalf("next row id after compact %d", f)
	}
}

func seq(a, b uint64) []uint64 {
	var out []uint64
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}
