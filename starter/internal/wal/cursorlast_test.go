package wal

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// An index emptied by deletes in the transaction that reads it (a claim
// or an ack that takes every run) still answers: bbolt's own Last loops
// for ever once every leaf page of a bucket of several pages is empty.
func TestCursorLastOnBucketEmptiedInTx(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "b.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := []byte("x")
	err = db.Update(func(btx *bolt.Tx) error {
		b, err := btx.CreateBucket(name)
		if err != nil {
			return err
		}
		for i := range uint64(5000) {
			if err := b.Put(u64key(i+1), u64key(i+1)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(name)
		for i := range uint64(5000) {
			if err := b.Delete(u64key(i + 1)); err != nil {
				return err
			}
		}
		if k, _ := cursorLast(b.Cursor()); k != nil {
			t.Errorf("last key %x of an empty bucket", k)
		}
		x := index{b, pendingKind, "test"}
		if x.overlaps(10, 20) {
			t.Error("an empty index overlaps 10..20")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
