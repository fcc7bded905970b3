package wal

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func FuzzDecodeBlock(f *testing.F) {
	rows := []NewRow{{SourceID: "a", Payload: []byte("one")}, {SourceID: "b", Payload: bytes.Repeat([]byte("xy"), 100)}, {SourceID: "a"}}
	good := encodeBlock(7, 100, t0, rows)
	f.Add(good)
	f.Add(encodeBlock(1, 1, 0, rows[:1]))
	f.Add(good[:blockHeaderSize])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		var first uint64 = 7
		if h, err := parseBlockHeader(v); err == nil {
			first = h.first
		}
		b := decodeBlock(first, v, plainKeys)
		blockPayloadLens(v)
		if b.err != nil {
			return
		}
		// A block that decodes re-encodes to a block with the same rows.
		var again []NewRow
		for id := b.first; id <= b.last(); id++ {
			again = append(again, NewRow{SourceID: b.source(id), Payload: b.payload(id)})
		}
		b2 := decodeBlock(b.first, encodeBlock(b.first, b.firstBatch, b.created, again), plainKeys)
		if b2.err != nil || b2.count != b.count {
			t.Fatalf("re-encoded block: %v, count %d want %d", b2.err, b2.count, b.count)
		}
		for id := b.first; id <= b.last(); id++ {
			if !bytes.Equal(b2.payload(id), b.payload(id)) || b2.source(id) != b.source(id) || b2.batchID(id) != b.batchID(id) {
				t.Fatalf("row %d differs after a round trip", id)
			}
		}
	})
}

func TestBlockRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		rows []NewRow
	}{
		{"one row", []NewRow{{SourceID: "s", Payload: []byte("hello")}}},
		{"empty payloads", []NewRow{{SourceID: "s"}, {SourceID: "t"}}},
		{"compressible", []NewRow{{SourceID: "s", Payload: bytes.Repeat([]byte("log line "), 50)}, {SourceID: "s", Payload: bytes.Repeat([]byte("z"), 300)}}},
		{"sources interleaved", []NewRow{{SourceID: "a", Payload: []byte("1")}, {SourceID: "b", Payload: []byte("2")}, {SourceID: "a", Payload: []byte("3")}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := encodeBlock(42, 1000, t0, c.rows)
			b := decodeBlock(42, v, plainKeys)
			if b.err != nil {
				t.Fatal(b.err)
			}
			for i, r := range c.rows {
				id := uint64(42 + i)
				if b.source(id) != r.SourceID || !bytes.Equal(b.payload(id), r.Payload) || b.batchID(id) != int64(1000+i) || b.created != t0 {
					t.Fatalf("row %d: %q %q %d", id, b.source(id), b.payload(id), b.batchID(id))
				}
			}
			broken := bytes.Clone(v)
			broken[30] ^= 0xff // the stored checksum
			if bad := decodeBlock(42, broken, plainKeys); !isChecksum(bad.err) {
				t.Fatalf("block stored with a broken checksum: %v", bad.err)
			}
			if other := decodeBlock(43, v, plainKeys); other.err == nil {
				t.Fatal("a block under another key decoded")
			}
		})
	}
}

func blockKeys(t *testing.T, w *WAL) []uint64 {
	t.Helper()
	var out []uint64
	_ = w.View(func(tx *ReadTx) error {
		c := tx.blocks.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			id, _ := keyID(k)
			out = append(out, id)
		}
		return nil
	})
	return out
}

// TestBlockFreedWithItsLastRow: a block stays while any of its rows is
// in any state (acks out of order, a failed row backed off, a DEAD row,
// an ACKED row kept by retention), and goes with the last one.
func TestBlockFreedWithItsLastRow(t *testing.T) {
	clk := newClock(t0)
	w := openTest(t, clk)
	appendN(t, w, 10) // block 1: rows 1..10
	appendN(t, w, 3)  // block 11: rows 11..13
	claim(t, w, 13, t0)
	steps := []struct {
		name string
		do   func(tx *Tx) error
		want []uint64
	}{
		{"acks out of order", func(tx *Tx) error { return tx.Ack([]uint64{9, 3, 1, 2, 10}, 0, t0) }, []uint64{1, 11}},
		{"one backed off, one DEAD", func(tx *Tx) error {
			if _, err := tx.Fail([]uint64{4}, true, t0+60_000, 5, "busy", t0); err != nil {
				return err
			}
			_, err := tx.Fail([]uint64{5}, true, t0, 1, "bad", t0)
			return err
		}, []uint64{1, 11}},
		{"the rest acked, one kept", func(tx *Tx) error {
			if err := tx.Ack([]uint64{6, 7}, 0, t0); err != nil {
				return err
			}
			return tx.Ack([]uint64{8}, time.Hour, t0)
		}, []uint64{1, 11}},
		{"the second block acked whole", func(tx *Tx) error { return tx.Ack([]uint64{11, 12, 13}, 0, t0) }, []uint64{1}},
		{"DEAD purged", func(tx *Tx) error { _, err := tx.PurgeDead(); return err }, []uint64{1}},
		{"ACKED cleaned up", func(tx *Tx) error { _, err := tx.CleanupAcked(t0, 0); return err }, []uint64{1}},
		{"the backed-off row claimed and acked", func(tx *Tx) error {
			rows, err := tx.Claim(10, t0+60_000)
			if err != nil {
				return err
			}
			if len(rows) != 1 || rows[0].ID != 4 || rows[0].Attempts != 1 {
				return fmt.Errorf("claimed %+v, want row 4", rows)
			}
			return tx.Ack([]uint64{4}, 0, t0)
		}, nil},
	}
	for _, s := range steps {
		mustUpdate(t, w, s.do)
		if got := blockKeys(t, w); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Fatalf("after %s: blocks %v, want %v", s.name, got, s.want)
		}
		checkConsistent(t, w)
	}
	if c := counts(t, w); c.Total() != 0 || c.PayloadBytes != 0 {
		t.Fatalf("counts %+v", c)
	}
}

// TestRolledBackAppendNotCached: the ids of a block appended in a
// transaction that rolled back are handed out again; the cache must not
// serve the rolled-back rows for them.
func TestRolledBackAppendNotCached(t *testing.T) {
	w := openTest(t, newClock(t0))
	rollback := errors.New("rolled back")
	err := w.Update(func(tx *Tx) error {
		if _, _, err := tx.Append([]NewRow{{SourceID: "s", Payload: []byte("gone")}}); err != nil {
			return err
		}
		if _, err := tx.Claim(1, t0); err != nil { // decodes the block into the cache
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	mustUpdate(t, w, func(tx *Tx) error {
		_, _, err := tx.Append([]NewRow{{SourceID: "s", Payload: []byte("kept")}})
		return err
	})
	if got := claim(t, w, 1, t0); len(got) != 1 || string(got[0].Payload) != "kept" {
		t.Fatalf("claimed %+v", got)
	}
}

// TestAppendSplitsBigGroups: a group over blockMaxRows rows becomes
// several blocks, with consecutive ids and batch ids across them.
func TestAppendSplitsBigGroups(t *testing.T) {
	w := openTest(t, newClock(t0))
	n := 2*blockMaxRows + 7
	appendN(t, w, n)
	if got := blockKeys(t, w); fmt.Sprint(got) != fmt.Sprint([]uint64{1, blockMaxRows + 1, 2*blockMaxRows + 1}) {
		t.Fatalf("blocks %v", got)
	}
	rows := claim(t, w, n, t0)
	for i := 1; i < len(rows); i++ {
		if rows[i].ID != rows[i-1].ID+1 || rows[i].BatchID != rows[i-1].BatchID+1 {
			t.Fatalf("rows %+v and %+v not consecutive", rows[i-1], rows[i])
		}
	}
}

// TestClaimAfterAppendDecodesNothing: a claim right after the append
// that wrote its rows finds their blocks in the cache, put there by the
// append, and reads no stored block.
func TestClaimAfterAppendDecodesNothing(t *testing.T) {
	w := openTest(t, newClock(t0))
	n := blockMaxRows + 9 // two blocks
	appendN(t, w, n)
	mustUpdate(t, w, func(tx *Tx) error {
		rows, err := tx.Claim(n, t0)
		if err != nil {
			return err
		}
		if len(rows) != n {
			t.Errorf("claimed %d rows, want %d", len(rows), n)
		}
		if tx.readBytes != 0 {
			t.Errorf("the claim read %d bytes of stored blocks, want 0", tx.readBytes)
		}
		return nil
	})
}

// TestAppendCacheMatchesStore: what an append leaves in the cache is what
// decoding its stored block gives, field by field, for every shape of
// group: one row, several sources, empty payloads, incompressible
// payloads, a group split into several blocks.
func TestAppendCacheMatchesStore(t *testing.T) {
	noise := make([]byte, 3000)
	for i := range noise {
		noise[i] = byte(i*7919 + i*i*31)
	}
	big := make([]NewRow, blockMaxRows+3)
	for i := range big {
		big[i] = NewRow{SourceID: fmt.Sprint("s", i%3), Payload: []byte(strings.Repeat("line ", i%40))}
	}
	cases := []struct {
		name string
		rows []NewRow
	}{
		{"one row", []NewRow{{SourceID: "a", Payload: []byte("hello")}}},
		{"sources", []NewRow{{SourceID: "a", Payload: []byte("1")}, {SourceID: "b", Payload: []byte("22")}, {SourceID: "a", Payload: []byte("333")}}},
		{"empty payloads", []NewRow{{SourceID: "a"}, {SourceID: "a"}}},
		{"incompressible", []NewRow{{SourceID: "a", Payload: noise}, {SourceID: "a", Payload: noise[:17]}}},
		{"split", big},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := openTest(t, newClock(t0))
			appendN(t, w, 3) // ids and batch ids not starting at 1
			var first, last uint64
			mustUpdate(t, w, func(tx *Tx) error {
				var err error
				first, last, err = tx.Append(c.rows)
				return err
			})
			_ = w.View(func(tx *ReadTx) error {
				for id := first; id <= last; {
					cached := w.cache.get(id)
					if cached == nil {
						t.Fatalf("row %d: block not cached after its append", id)
					}
					k, v, ok := tx.findBlock(id)
					if !ok {
						t.Fatalf("row %d: no stored block", id)
					}
					stored := decodeBlock(k, v, plainKeys)
					if stored.err != nil {
						t.Fatalf("row %d: %v", id, stored.err)
					}
					if cached.blockHeader != stored.blockHeader || !bytes.Equal(cached.raw, stored.raw) ||
						!slices.Equal(cached.sources, stored.sources) || !slices.Equal(cached.src, stored.src) || !slices.Equal(cached.offs, stored.offs) {
						t.Fatalf("row %d: cached block\n%+v\nstored block\n%+v", id, cached, stored)
					}
					id = stored.last() + 1
				}
				return nil
			})
		})
	}
}

// TestBlockCacheBoundedByBytes: the cache holds blocks up to
// blockCacheBytes of payload, however many, dropping the oldest first,
// and forgets a block once it is deleted.
func TestBlockCacheBoundedByBytes(t *testing.T) {
	var c blockCache
	mk := func(first uint64, size int) *block {
		return &block{blockHeader: blockHeader{first: first, count: 1}, sources: []string{"s"}, src: []uint32{0}, offs: []int{0, size}, raw: make([]byte, size)}
	}
	size := blockCacheBytes / 8
	for i := range 20 {
		c.put(mk(uint64(i+1), size))
		if c.bytes > blockCacheBytes {
			t.Fatalf("after %d puts the cache holds %d bytes, over %d", i+1, c.bytes, blockCacheBytes)
		}
	}
	if c.get(20) == nil || c.get(1) != nil {
		t.Fatal("want the newest block kept and the oldest dropped")
	}
	if len(c.b) < 4 {
		t.Fatalf("only %d blocks of %d bytes kept in %d", len(c.b), size, blockCacheBytes)
	}
	c.drop(20)
	if c.get(20) != nil {
		t.Fatal("a dropped block is still served")
	}
	// One block over the budget is kept alone: the claim that decoded it
	// reads its rows next.
	c.put(mk(100, 2*blockCacheBytes))
	if c.get(100) == nil || len(c.b) != 1 {
		t.Fatalf("big block: %d blocks kept", len(c.b))
	}
}

// SetDecodedCacheExtra raises the cache's bound by its extra bytes, and
// keepDecoded follows it: an append behind more than blockCacheBytes of
// due rows keeps its decoded block once the extra covers them.
func TestDecodedCacheExtra(t *testing.T) {
	w := &WAL{}
	w.SetDecodedCacheExtra(blockCacheBytes)
	c := &w.cache
	mk := func(first uint64, size int) *block {
		return &block{blockHeader: blockHeader{first: first, count: 1}, sources: []string{"s"}, src: []uint32{0}, offs: []int{0, size}, raw: make([]byte, size)}
	}
	size := blockCacheBytes / 8
	for i := range 40 {
		c.put(mk(uint64(i+1), size))
	}
	if c.bytes <= blockCacheBytes || c.bytes > 2*blockCacheBytes {
		t.Fatalf("cache holds %d bytes with an extra of %d, want above %d and at most %d", c.bytes, blockCacheBytes, blockCacheBytes, 2*blockCacheBytes)
	}
	group := []NewRow{{Payload: make([]byte, 100)}}
	ahead := int64(blockCacheBytes/100 + 1000) // more due payload than blockCacheBytes
	if keepDecoded(ahead, group, blockCacheBytes) {
		t.Fatal("kept behind more than blockCacheBytes of due rows without an extra")
	}
	if !keepDecoded(ahead, group, c.limit()) {
		t.Fatalf("not kept behind %d bytes of due rows with a cache of %d", ahead*100, c.limit())
	}
	w.SetDecodedCacheExtra(-1)
	if c.limit() != blockCacheBytes {
		t.Fatalf("limit %d after a negative extra, want %d", c.limit(), blockCacheBytes)
	}
}
