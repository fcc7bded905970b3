package wal

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Damaged WAL fixtures. The tests edit the file's bytes the way a bad disk,
// a torn copy or a stray write would: below bbolt, so that nothing keeps
// the B-tree consistent. The page layout used here is bbolt's (1.4):
// 16-byte page header (id, flags, count, overflow), 16-byte elements, key
// and value at the element's offset plus pos, all in native byte order.

const (
	fixRows     = 2000 // in blocks of fixBlock: enough for a blocks tree with a branch page at 8 KiB pages
	fixBlock    = 10   // rows per Append, so per block
	fixDead     = 3    // rows 1..3 DEAD
	fixAcked    = 4    // rows 4..7 ACKED (retention)
	fixSending  = 5    // rows 8..12 SENDING
	fixPosCount = 3
)

// buildFixture writes a closed WAL with rows in every state and positions
// of two inputs, and returns its path.
func buildFixture(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wal.db")
	clk := newClock(t0)
	w, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]NewRow, fixRows)
	for i := range rows {
		rows[i] = NewRow{SourceID: "app", Payload: fmt.Appendf(nil, `{"_line":%d,"pad":"%040d"}`, i+1, i)}
	}
	mustUpdate(t, w, func(tx *Tx) error {
		for i := 0; i < len(rows); i += fixBlock {
			if _, _, err := tx.Append(rows[i : i+fixBlock]); err != nil {
				return err
			}
		}
		if _, err := tx.Claim(fixDead+fixAcked+fixSending, t0); err != nil {
			return err
		}
		if _, err := tx.Fail(seq(1, fixDead), true, t0, 1, "DECODE_FAILED", t0); err != nil {
			return err
		}
		if err := tx.Ack(seq(fixDead+1, fixDead+fixAcked), time.Hour, t0); err != nil {
			return err
		}
		if err := tx.SetMeta("input_started:app", []byte("1")); err != nil {
			return err
		}
		return tx.SavePositions([]PositionUpdate{
			{SourceID: "app", Key: "/var/log/a.log", State: []byte(`{"offset":42}`)},
			{SourceID: "app", Key: "/var/log/b.log", State: []byte(`{"offset":7}`)},
			{SourceID: "other", Key: "/x", State: []byte{0, 1}},
		})
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

type rawWAL struct {
	path string
	b    []byte
	ps   int
}

func loadRaw(t testing.TB, path string) *rawWAL {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := int(binary.NativeEndian.Uint32(b[16+8:]))
	return &rawWAL{path: path, b: b, ps: ps}
}

func (r *rawWAL) save(t testing.TB) {
	t.Helper()
	if err := os.WriteFile(r.path, r.b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (r *rawWAL) page(id uint64) []byte {
	off := int(id) * r.ps
	return r.b[off : off+r.ps]
}

func (r *rawWAL) flags(id uint64) uint16 { return binary.NativeEndian.Uint16(r.page(id)[8:]) }
func (r *rawWAL) count(id uint64) int    { return int(binary.NativeEndian.Uint16(r.page(id)[10:])) }

// leafKV returns the offsets in the file of key i and value i of leaf page id.
func (r *rawWAL) leafKV(id uint64, i int) (koff, ksize, voff, vsize int) {
	base := int(id) * r.ps
	e := base + 16 + 16*i
	pos := int(binary.NativeEndian.Uint32(r.b[e+4:]))
	ksize = int(binary.NativeEndian.Uint32(r.b[e+8:]))
	vsize = int(binary.NativeEndian.Uint32(r.b[e+12:]))
	koff = e + pos
	return koff, ksize, koff + ksize, vsize
}

// branchChild returns the child page of element i of branch page id and
// the file offset of that pgid field.
func (r *rawWAL) branchChild(id uint64, i int) (uint64, int) {
	e := int(id)*r.ps + 16 + 16*i
	return binary.NativeEndian.Uint64(r.b[e+8:]), e + 8
}

// bucketRoot is the root page of a top-level bucket, read through bbolt
// from the intact file.
func bucketRoot(t testing.TB, path string, name []byte) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root uint64
	_ = db.View(func(tx *bolt.Tx) error { root = uint64(tx.Bucket(name).RootPage()); return nil })
	if root == 0 {
		t.Fatalf("bucket %s is inline", name)
	}
	return root
}

// rowsLeaves returns the blocks bucket's branch root and its leaf children.
func rowsLeaves(t testing.TB, r *rawWAL) (root uint64, leaves []uint64) {
	t.Helper()
	root = bucketRoot(t, r.path, bucketBlocks)
	if r.flags(root) != 0x01 {
		t.Fatalf("blocks root page %d is not a branch page (flags %x): fixture too small", root, r.flags(root))
	}
	for i := range r.count(root) {
		c, _ := r.branchChild(root, i)
		if r.flags(c) != 0x02 {
			t.Fatalf("rows tree deeper than expected")
		}
		leaves = append(leaves, c)
	}
	return root, leaves
}

// damage is one way to break a fixture; it returns what the tests expect.
type damage struct {
	name string
	// apply edits the fixture at path.
	apply func(t testing.TB, path string)
	// opens: a read-write open succeeds (the damage is below the B-tree:
	// a row value, which Claim quarantines).
	opens bool
	// noMeta: no valid meta page is left: bbolt cannot open the file and
	// salvage finds the rows by scanning every page.
	noMeta bool
	// lostRows is how many rows salvage cannot copy (-1: some, unknown),
	// in lostBlocks blocks. Rows on pages a damaged branch cut off are
	// found by the page scan.
	lostRows, lostBlocks int
}

var damages = []damage{
	{name: "row value byte flipped", opens: true, lostRows: fixBlock, lostBlocks: 1, apply: func(t testing.TB, path string) {
		r := loadRaw(t, path)
		_, leaves := rowsLeaves(t, r)
		_, _, voff, vsize := r.leafKV(leaves[1], 5)
		r.b[voff+vsize-3] ^= 0xff // in the payloads: the block fails its checksum
		r.save(t)
	}},
	{name: "row key byte flipped out of order", lostRows: 0, apply: func(t testing.TB, path string) {
		r := loadRaw(t, path)
		_, leaves := rowsLeaves(t, r)
		koff, _, _, _ := r.leafKV(leaves[1], 5)
		r.b[koff] ^= 0x80 // highest byte: the key now sorts after every other
		r.save(t)
	}},
	{name: "row key byte flipped in order", lostRows: 0, apply: func(t testing.TB, path string) {
		r := loadRaw(t, path)
		_, leaves := rowsLeaves(t, r)
		last := leaves[len(leaves)-1]
		koff, ksize, _, _ := r.leafKV(last, r.count(last)-1)
		// The last block of the last leaf gets a higher id: the tree
		// stays ordered, its rows leave every index.
		r.b[koff+ksize-2] ^= 0x40
		r.save(t)
	}},
	{name: "branch page element damaged", lostRows: 0, apply: func(t testing.TB, path string) {
		r := loadRaw(t, path)
		root, _ := rowsLeaves(t, r)
		_, off := r.branchChild(root, 1)
		binary.NativeEndian.PutUint64(r.b[off:], 0x0000_00ff_0000_0003) // far outside the file
		r.save(t)
	}},
	{name: "branch page points at a sibling", lostRows: 0, apply: func(t testing.TB, path string) {
		r := loadRaw(t, path)
		root, _ := rowsLeaves(t, r)
		c0, _ := r.branchChild(root, 0)
		_, off := r.branchChild(root, 2)
		binary.NativeEndian.PutUint64(r.b[off:], c0)
		r.save(t)
	}},
	{name: "truncated to half", lostRows: -1, apply: func(t testing.TB, path string) {
		r := loadRaw(t, path)
		// Half of what the tree uses (the file itself is mostly preallocated).
		hwm := binary.NativeEndian.Uint64(r.b[16+40:])
		if m1 := binary.NativeEndian.Uint64(r.b[r.ps+16+40:]); m1 > hwm {
			hwm = m1
		}
		r.b = r.b[:int(hwm)*r.ps/2]
		r.save(t)
	}},
	{name: "first meta page zeroed", lostRows: 0, apply: func(t testing.TB, path string) {
		r := loadRaw(t, path)
		clear(r.page(0))
		r.save(t)
	}},
	{name: "both meta pages zeroed", noMeta: true, apply: func(t testing.TB, path string) {
		r := loadRaw(t, path)
		clear(r.b[:2*r.ps])
		r.save(t)
	}},
}

func TestFixtureIsConsistent(t *testing.T) {
	path := buildFixture(t)
	w := openAt(t, path, newClock(t0))
	c := counts(t, w)
	if c.Total() != fixRows || c.Dead != fixDead || c.Acked != fixAcked || c.Sending != fixSending {
		t.Fatalf("fixture counts %+v", c)
	}
}

func init() {
	damages = append(damages,
		damage{name: "pending run end damaged", lostRows: 0, apply: func(t testing.TB, path string) {
			// Written through bbolt: the tree is sound, the value is not.
			tamper(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketPending)
				k, _ := b.Cursor().First()
				return b.Put(k, u64key(1<<62))
			})
		}},
		damage{name: "sending run start damaged", lostRows: 0, apply: func(t testing.TB, path string) {
			tamper(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketSending)
				k, v := b.Cursor().First()
				v = append([]byte(nil), v...)
				if err := b.Delete(k); err != nil {
					return err
				}
				return b.Put(u64key(binary.BigEndian.Uint64(k)^0x0100), v)
			})
		}},
	)
}
