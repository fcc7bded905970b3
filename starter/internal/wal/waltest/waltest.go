// Package waltest damages WAL files for the tests of the packages that
// must survive them (the scheduler's start, the db commands), the way a
// stray write or a bad disk would: below bbolt, on the bytes of the file.
package waltest

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// BreakRowsBranch makes the tree that holds the rows (the blocks bucket)
// reference a page twice, on which bbolt's own read-write open panics in
// a goroutine of its own: when its root is a branch page, its second
// child is pointed at the first; when it is a single leaf (a WAL of a few
// big blocks), the bucket's root is pointed at the page of the buckets
// themselves. The WAL at path must be closed.
func BreakRowsBranch(tb testing.TB, path string) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	var root, top uint64
	_ = db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket([]byte("blocks")).RootPage())
		top = uint64(tx.Cursor().Bucket().RootPage())
		return nil
	})
	ps := db.Info().PageSize
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	// A page header is 16 bytes (id, flags, count, overflow); each branch
	// element is 16 (pos, ksize, pgid), the child's pgid at offset 8; each
	// leaf element is 16 (flags, pos, ksize, vsize), its key at the
	// element's offset plus pos, the value after it.
	pg := b[int(root)*ps:]
	switch {
	case binary.NativeEndian.Uint16(pg[8:]) == 0x01 && binary.NativeEndian.Uint16(pg[10:]) >= 2:
		binary.NativeEndian.PutUint64(pg[16+16+8:], binary.NativeEndian.Uint64(pg[16+8:]))
	default:
		tp := b[int(top)*ps:]
		found := false
		for i := range int(binary.NativeEndian.Uint16(tp[10:])) {
			e := 16 + 16*i
			pos, ksize := int(binary.NativeEndian.Uint32(tp[e+4:])), int(binary.NativeEndian.Uint32(tp[e+8:]))
			if string(tp[e+pos:e+pos+ksize]) == "blocks" {
				binary.NativeEndian.PutUint64(tp[e+pos+ksize:], top) // the bucket header's root
				found = true
			}
		}
		if !found {
			tb.Fatal("no blocks bucket on the page of the buckets")
		}
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// FlipBlockByte flips the last byte of the stored block that holds row
// id, below bbolt, as a bad disk would: the block then fails its
// checksum. The WAL at path must be closed.
func FlipBlockByte(tb testing.TB, path string, id uint64) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	var v []byte
	_ = db.View(func(tx *bolt.Tx) error {
		var key [8]byte
		binary.BigEndian.PutUint64(key[:], id+1)
		// Each block is the value under key 0 of a bucket of its own,
		// named by its first row id, in the blocks bucket.
		blocks := tx.Bucket([]byte("blocks"))
		c := blocks.Cursor()
		k, _ := c.Seek(key[:])
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		if nb := blocks.Bucket(k); nb != nil {
			v = append([]byte(nil), nb.Get([]byte{0})...)
		}
		return nil
	})
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	i := bytes.Index(b, v)
	if len(v) == 0 || i < 0 || bytes.Contains(b[i+1:], v) {
		tb.Fatalf("the block of row %d is not stored exactly once in %s", id, path)
	}
	b[i+len(v)-1] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}
