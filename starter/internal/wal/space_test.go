package wal

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/disktest"
	"github.com/edge-agent/edge-agent/starter/internal/fsspace"
)

// appendUntilFull appends groups of ~1 KiB rows until the WAL refuses one
// and returns how many went in and the refusal.
func appendUntilFull(t *testing.T, w *WAL) (int, error) {
	t.Helper()
	// Incompressible payloads: blocks are compressed, and a repeated byte
	// would take almost no room.
	rng := rand.NewChaCha8([32]byte{1})
	rows := make([]NewRow, 64)
	for i := range rows {
		payload := make([]byte, 1000)
		_, _ = rng.Read(payload)
		rows[i] = NewRow{SourceID: "src", Payload: payload}
	}
	n := 0
	for i := 0; i < 10000; i++ { // bounded: a few MiB fill long before
		err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err })
		if err != nil {
			return n, err
		}
		n += len(rows)
	}
	t.Fatal("the disk never filled up")
	return n, nil
}

// A WAL filled up to a full disk, then the rest of the disk taken by
// something else: the runtime's commit that acks the rows in flight and
// claims the next ones must still commit, and the pages it frees must take
// new rows again.
func TestFullDiskAcksCommitAndFreeRoom(t *testing.T) {
	disk := disktest.Small(t, 4<<20)
	clk := newClock(t0)
	w := openAt(t, filepath.Join(disk, "wal.db"), clk)
	n, err := appendUntilFull(t, w)
	if !IsNoSpace(err) {
		t.Fatalf("append on a full disk: %v, want a no-space error", err)
	}
	sent := claim(t, w, 1024, clk.MS())
	disktest.Fill(t, disk)
	if _, err := appendUntilFull(t, w); !IsNoSpace(err) {
		t.Fatalf("append with the ballast: %v, want a no-space error", err)
	}
	var next []Row
	err = w.Update(func(tx *Tx) error {
		if err := tx.Ack(ids(sent), 0, clk.MS()); err != nil {
			return err
		}
		next, err = tx.Claim(1024, clk.MS())
		return err
	})
	if err != nil {
		t.Fatalf("ack of %d rows and claim on a full disk: %v", len(sent), err)
	}
	c := counts(t, w)
	if c.Sending != len(next) || c.Pending != n-len(sent)-len(next) {
		t.Fatalf("after the ack: %+v, want %d SENDING and %d PENDING", c, len(next), n-len(sent)-len(next))
	}
	more, err := appendUntilFull(t, w)
	if more == 0 || !IsNoSpace(err) {
		t.Fatalf("after freeing %d rows: %d appended (%v), want some", len(sent), more, err)
	}
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("the disk filled up past the reserve: %v", err)
	}
}

// Opening a WAL on a full disk writes nothing that needs new space, and
// the rows left SENDING can be returned to PENDING a few at a time.
func TestOpenOnFullDisk(t *testing.T) {
	disk := disktest.Small(t, 6<<20)
	path := filepath.Join(disk, "wal.db")
	clk := newClock(t0)
	w, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("y"), 1000)
	rows := make([]NewRow, 250)
	for i := range rows {
		rows[i] = NewRow{SourceID: "src", Payload: payload}
	}
	for i := 0; i < 10 && err == nil; i++ {
		err = w.Update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err })
	}
	if err == nil {
		err = w.Update(func(tx *Tx) error { _, err := tx.Claim(2000, clk.MS()); return err })
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	disktest.Fill(t, disk)

	w = openAt(t, path, clk)
	var sending []uint64
	if err := w.View(func(tx *ReadTx) error { sending = tx.SendingIDs(); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(sending) != 2000 {
		t.Fatalf("%d rows SENDING after reopening, want 2000", len(sending))
	}
	for len(sending) > 0 {
		n := min(64, len(sending))
		if err := w.Update(func(tx *Tx) error { return tx.Release(sending[:n], clk.MS()) }); err != nil {
			t.Fatalf("release %d rows on a full disk (%d left): %v", n, len(sending), err)
		}
		sending = sending[n:]
	}
	if c := counts(t, w); c.Pending != 2500 || c.Sending != 0 {
		t.Fatalf("counts %+v, want 2500 PENDING", c)
	}
}

// A filesystem that reports a total of 0 blocks (some FUSE and network
// filesystems) has an unknown size, not a full disk: appends go on and
// only a failing write (ENOSPC) would stop them. One that reports a size
// and no room left refuses them.
func TestUnknownDiskSizeIsNotFull(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stat    fsspace.Space
		refused bool
	}{
		{"no size reported", fsspace.Space{Avail: 0, Size: 0}, false},
		{"full", fsspace.Space{Avail: 0, Size: 8 << 30}, true},
		{"room left", fsspace.Space{Avail: 1 << 30, Size: 8 << 30}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			w, err := Open(Options{
				Path:     filepath.Join(t.TempDir(), "wal.db"),
				Now:      clk.Now,
				statDisk: func(string) (fsspace.Space, bool) { return tc.stat, true },
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = w.Close() })
			rows := []NewRow{{SourceID: "src", Payload: []byte("line")}}
			for i := 0; i < 100; i++ {
				err = w.Update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err })
				if err != nil {
					break
				}
			}
			if tc.refused != errors.Is(err, ErrNoSpace) {
				t.Fatalf("append: %v, want refused=%v", err, tc.refused)
			}
		})
	}
}
