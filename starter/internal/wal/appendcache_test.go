package wal

import (
	"bytes"
	"fmt"
	"testing"
)

// TestAppendBehindBacklogNotCached: an append behind more PENDING payload
// than the block cache holds does not keep its decoded block (the claims
// of the rows ahead would evict it before its own claim: keeping it was a
// copy of every payload for nothing), while an append to a short queue
// does; the rows read back the same either way.
func TestAppendBehindBacklogNotCached(t *testing.T) {
	w := openTest(t, newClock(t0))
	payload := func(i int) []byte { return fmt.Appendf(nil, "%06d %s", i, bytes.Repeat([]byte{'a' + byte(i%26)}, 200)) }
	group := func(from, n int) []NewRow {
		rows := make([]NewRow, n)
		for i := range rows {
			rows[i] = NewRow{SourceID: "src", Payload: payload(from + i)}
		}
		return rows
	}
	next := 0
	add := func(n int) uint64 {
		var first uint64
		mustUpdate(t, w, func(tx *Tx) error {
			var err error
			first, _, err = tx.Append(group(next, n))
			return err
		})
		next += n
		return first
	}
	if id := add(10); w.cache.get(id) == nil {
		t.Fatal("an append to an empty queue did not cache its block")
	}
	// Fill the queue past the cache's budget.
	queued := func() int64 {
		var n int64
		_ = w.View(func(tx *ReadTx) error { n = tx.Counts().PayloadBytes; return nil })
		return n
	}
	for i := 0; i < 100 && queued() <= 2*blockCacheBytes; i++ {
		add(blockMaxRows)
	}
	w.cache.clear()
	if id := add(10); w.cache.get(id) != nil {
		t.Fatalf("an append behind %d pending rows cached its block", next-10)
	}
	// Every row reads back as appended, cached or not.
	rows := claim(t, w, next, t0)
	if len(rows) != next {
		t.Fatalf("claimed %d rows, want %d", len(rows), next)
	}
	for i, r := range rows {
		if !bytes.Equal(r.Payload, payload(i)) {
			t.Fatalf("row %d: payload %q, want %q", r.ID, r.Payload, payload(i))
		}
	}
}

// TestAppendValuesOutliveArenaRenewal: the block values of one
// transaction are assembled in the WAL's arena, which bbolt reads at the
// commit; a transaction that outgrows the arena gets a new one, and the
// next transaction reuses it. Every block of such transactions, small,
// incompressible and split ones among them, must be stored as appended.
func TestAppendValuesOutliveArenaRenewal(t *testing.T) {
	w := openTest(t, newClock(t0))
	noise := func(seed, n int) []byte {
		b := make([]byte, n)
		x := uint32(seed)*2654435761 + 1
		for i := range b {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b[i] = byte(x)
		}
		return b
	}
	var want [][]byte
	for tx := range 3 {
		mustUpdate(t, w, func(wtx *Tx) error {
			for g := range 6 {
				n := 1 + (tx*331+g*577)%(2*blockMaxRows)
				rows := make([]NewRow, n)
				for i := range rows {
					p := noise(len(want)+i, 50+(i*37)%700)
					if g%2 == 0 {
						p = bytes.Repeat([]byte{byte('a' + i%26)}, 50+(i*37)%700)
					}
					rows[i] = NewRow{SourceID: fmt.Sprint("s", g%3), Payload: p}
				}
				if _, _, err := wtx.Append(rows); err != nil {
					return err
				}
				for _, r := range rows {
					want = append(want, r.Payload)
				}
			}
			return nil
		})
	}
	w.cache.clear() // read every row from its stored block
	rows := claim(t, w, len(want), t0)
	if len(rows) != len(want) {
		t.Fatalf("claimed %d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if !bytes.Equal(r.Payload, want[i]) {
			t.Fatalf("row %d: stored payload differs from the appended one", r.ID)
		}
	}
}

// TestClaimedBlockLeavesCache: a claim that takes the last row of a
// block drops the block from the cache, since claims go in id order and
// the cache would only keep its payloads alive after the jobs that took
// them are done; a block claimed in part stays for the next claim. A
// row of a dropped block that comes back PENDING reads back the same.
func TestClaimedBlockLeavesCache(t *testing.T) {
	w := openTest(t, newClock(t0))
	payload := func(i int) []byte { return fmt.Appendf(nil, "%06d %s", i, bytes.Repeat([]byte{'a' + byte(i%26)}, 200)) }
	rows := make([]NewRow, 10)
	for i := range rows {
		rows[i] = NewRow{SourceID: "src", Payload: payload(i)}
	}
	var first uint64
	mustUpdate(t, w, func(tx *Tx) error {
		var err error
		first, _, err = tx.Append(rows)
		return err
	})
	if w.cache.get(first) == nil {
		t.Fatal("an append to an empty queue did not cache its block")
	}
	if got := claim(t, w, 4, t0); len(got) != 4 || w.cache.get(first) == nil {
		t.Fatalf("claimed %d rows; the block in part claimed is cached: %v", len(got), w.cache.get(first) != nil)
	}
	rest := claim(t, w, 100, t0)
	if len(rest) != 6 {
		t.Fatalf("claimed %d rows, want 6", len(rest))
	}
	if w.cache.get(first) != nil || w.cache.bytes != 0 {
		t.Fatalf("the block whose last row was claimed is still cached (%d bytes)", w.cache.bytes)
	}
	mustUpdate(t, w, func(tx *Tx) error { return tx.Release(ids(rest[4:]), t0) })
	again := claim(t, w, 100, t0)
	if len(again) != 2 {
		t.Fatalf("claimed %d released rows, want 2", len(again))
	}
	for i, r := range again {
		if want := payload(8 + i); r.ID != first+8+uint64(i) || !bytes.Equal(r.Payload, want) {
			t.Fatalf("row %d: payload %q, want row %d %q", r.ID, r.Payload, first+8+uint64(i), want)
		}
	}
}
