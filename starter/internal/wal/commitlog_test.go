package wal

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// recordCounter is a slog handler counting records whose message contains
// a given text.
type recordCounter struct {
	mu   *sync.Mutex
	msgs *[]string
}

func (c recordCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c recordCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	*c.msgs = append(*c.msgs, r.Message)
	c.mu.Unlock()
	return nil
}
func (c recordCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c recordCounter) WithGroup(string) slog.Handler      { return c }

func (c recordCounter) count(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range *c.msgs {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// A row quarantined by a Claim whose transaction then fails (a full disk,
// or the caller's error) was not moved at all: nothing may say it was.
func TestQuarantineLoggedOnlyOnceCommitted(t *testing.T) {
	w := openTest(t, newClock(t0))
	path := w.Path()
	appendN(t, w, 1)
	appendN(t, w, 1) // row 2 is a block of its own
	appendN(t, w, 1)
	_ = w.Close()
	tamper(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBlocks).Bucket(u64key(2))
		v := append([]byte(nil), b.Get(blockValueKey)...)
		v[len(v)-1] ^= 0xff
		return b.Put(blockValueKey, v)
	})
	logs := recordCounter{mu: &sync.Mutex{}, msgs: new([]string)}
	w, err := Open(Options{Path: path, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rollback := errors.New("the commit failed")
	for i := 0; i < 3; i++ {
		err := w.Update(func(tx *Tx) error {
			if _, err := tx.Claim(10, t0); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("update = %v", err)
		}
	}
	if n := logs.count("moved to DEAD"); n != 0 {
		t.Fatalf("%d lines say a row moved to DEAD, but no transaction committed", n)
	}
	claim(t, w, 10, t0)
	if n := logs.count("moved to DEAD"); n != 1 {
		t.Fatalf("%d lines say the row moved to DEAD after the commit, want 1", n)
	}
}
