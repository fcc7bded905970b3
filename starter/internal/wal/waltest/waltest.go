// Package waltest damages WAL files for the tests of the packages that
// must survive them (the scheduler's start, the db commands), the way a
// stray write or a bad disk would: below bbolt, on the bytes of the file.
package waltest

import (
	"encoding/binary"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// BreakRowsBranch points the second child of the rows tree's root (a
// branch page) at the first: the tree then references a page twice, on
// which bbolt's own read-write open panics in a goroutine of its own. The
// WAL at path must be closed and hold enough rows for a branch root.
func BreakRowsBranch(tb testing.TB, path string) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	var root uint64
	_ = db.View(func(tx *bolt.Tx) error { root = uint64(tx.Bucket([]byte("rows")).RootPage()); return nil })
	ps := db.Info().PageSize
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	// A page header is 16 bytes (id, flags, count, overflow); each branch
	// element is 16 (pos, ksize, pgid), the child's pgid at offset 8.
	pg := b[int(root)*ps:]
	if binary.NativeEndian.Uint16(pg[8:]) != 0x01 || binary.NativeEndian.Uint16(pg[10:]) < 2 {
		tb.Fatal("rows root is not a branch page with 2 children or more: fixture too small")
	}
	binary.NativeEndian.PutUint64(pg[16+16+8:], binary.NativeEndian.Uint64(pg[16+8:]))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}
