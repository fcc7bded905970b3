package wal

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// oddPositions have source ids and keys with bytes a separator could clash
// with: prefixes of each other, bytes just above the separator, UTF-8,
// 0xff.
var oddPositions = []PositionUpdate{
	{SourceID: "app", Key: "/var/log/app.log", State: []byte(`{"offset":42}`)},
	{SourceID: "app", Key: "/var/log/app.log.1", State: []byte{0, 1, 2}},
	{SourceID: "app\x01", Key: "\x01", State: []byte("x")},
	{SourceID: "ap", Key: "p\x01", State: []byte("y")},
	{SourceID: "app-logs/ü", Key: "dev:2049 ino:1311234", State: []byte("z")},
	{SourceID: "\xff\xfe", Key: "\xff", State: []byte{}},
}

// wantPositions is what ups leave, by source.
func wantPositions(ups []PositionUpdate) map[string]map[string][]byte {
	out := map[string]map[string][]byte{}
	for _, u := range ups {
		if out[u.SourceID] == nil {
			out[u.SourceID] = map[string][]byte{}
		}
		if u.State == nil {
			delete(out[u.SourceID], u.Key)
			if len(out[u.SourceID]) == 0 {
				delete(out, u.SourceID)
			}
			continue
		}
		out[u.SourceID][u.Key] = u.State
	}
	return out
}

// readPositions reads every position through Sources and Positions, and
// checks that Sources is in byte order.
func readPositions(t *testing.T, w *WAL) (map[string]map[string][]byte, int) {
	t.Helper()
	out := map[string]map[string][]byte{}
	var schema int
	err := w.View(func(tx *ReadTx) error {
		schema = tx.SchemaVersion()
		srcs, err := tx.Sources()
		if err != nil {
			return err
		}
		if !slices.IsSorted(srcs) || len(slices.Compact(slices.Clone(srcs))) != len(srcs) {
			t.Errorf("Sources %q: not in byte order or repeated", srcs)
		}
		for _, s := range srcs {
			if out[s], err = tx.Positions(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, schema
}

func samePositions(a, b map[string]map[string][]byte) bool {
	return maps.EqualFunc(a, b, func(x, y map[string][]byte) bool { return maps.EqualFunc(x, y, bytes.Equal) })
}

// rawLayout describes the positions bucket as bbolt holds it: nested
// buckets and flat keys.
func rawLayout(t *testing.T, path string) (nested []string, flat [][]byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPositions).ForEach(func(k, v []byte) error {
			if v == nil {
				nested = append(nested, string(k))
			} else {
				flat = append(flat, bytes.Clone(k))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return nested, flat
}

func savePositions(t *testing.T, w *WAL, ups []PositionUpdate) {
	t.Helper()
	if err := w.Update(func(tx *Tx) error { return tx.SavePositions(ups) }); err != nil {
		t.Fatal(err)
	}
}

// TestPositionsSchema4: a new file has schema 4 and keeps its positions
// flat, one key per (source id, key), read back exactly, through a
// reopen and a salvage, with source ids that are prefixes of each other.
func TestPositionsSchema4(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	savePositions(t, w, oddPositions)
	del := PositionUpdate{SourceID: "app", Key: "/var/log/app.log.1"}
	savePositions(t, w, []PositionUpdate{del})
	want := wantPositions(append(slices.Clone(oddPositions), del))
	got, schema := readPositions(t, w)
	if schema != 4 || !samePositions(got, want) {
		t.Fatalf("schema %d, positions %q, want schema 4, %q", schema, got, want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	nested, flat := rawLayout(t, path)
	if len(nested) != 0 || len(flat) != len(oddPositions)-1 || !slices.ContainsFunc(flat, func(k []byte) bool { return string(k) == "app\x00/var/log/app.log" }) {
		t.Fatalf("positions bucket: nested %q, flat %q, want only flat keys <source> 0x00 <key>", nested, flat)
	}
	w, err = Open(Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = readPositions(t, w)
	_ = w.Close()
	if !samePositions(got, want) {
		t.Fatalf("after reopen %q, want %q", got, want)
	}
	dst := filepath.Join(t.TempDir(), "salvaged.db")
	if rep, err := Salvage(path, dst, SalvageOptions{}); err != nil || rep.Positions != len(oddPositions)-1 {
		t.Fatalf("salvage: %+v, %v", rep, err)
	}
	w, err = Open(Options{Path: dst, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, schema = readPositions(t, w); schema != 4 || !samePositions(got, want) {
		t.Fatalf("salvaged: schema %d, %q, want 4, %q", schema, got, want)
	}
}

// TestPositionsSeparatorRefused: in schema 4 a source id or key holding the
// separator byte is refused, naming both, and nothing of the batch is
// saved; Positions of such an id is empty.
func TestPositionsSeparatorRefused(t *testing.T) {
	w, err := Open(Options{Path: filepath.Join(t.TempDir(), "wal.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, u := range []PositionUpdate{
		{SourceID: "a\x00b", Key: "k", State: []byte("1")},
		{SourceID: "a", Key: "\x00b", State: []byte("1")},
		{SourceID: "a", Key: "b\x00", State: nil},
	} {
		err := w.Update(func(tx *Tx) error {
			return tx.SavePositions([]PositionUpdate{{SourceID: "ok", Key: "k", State: []byte("1")}, u})
		})
		if err == nil || !strings.Contains(err.Error(), "0x00") || !strings.Contains(err.Error(), fmt.Sprintf("%q/%q", u.SourceID, u.Key)) {
			t.Errorf("%q/%q: err %v, want one naming them and the byte 0x00", u.SourceID, u.Key, err)
		}
	}
	if got, _ := readPositions(t, w); len(got) != 0 {
		t.Errorf("positions %q after refused batches, want none", got)
	}
	err = w.View(func(tx *ReadTx) error {
		savedA, err := tx.Positions("a\x00b")
		if err == nil && len(savedA) != 0 {
			t.Errorf("Positions(a 0x00 b) = %q", savedA)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzFlatPosKey: a schema-4 key splits back into the source id and key
// it was made of whenever neither holds the separator, and any byte
// string splits without a panic into parts free of it.
func FuzzFlatPosKey(f *testing.F) {
	for _, u := range oddPositions {
		f.Add(u.SourceID, u.Key, flatPosKey(u.SourceID, u.Key))
	}
	f.Add("a", "b", []byte("\x00"))
	f.Add("", "", []byte("a\x00"))
	f.Fuzz(func(t *testing.T, src, key string, raw []byte) {
		if s, k, ok := splitFlatPosKey(raw); ok && (s == "" || k == "" || strings.IndexByte(s, posSep) >= 0) {
			t.Fatalf("split %q = %q, %q", raw, s, k)
		}
		if src == "" || key == "" || strings.IndexByte(src, posSep) >= 0 || strings.IndexByte(key, posSep) >= 0 {
			return
		}
		s, k, ok := splitFlatPosKey(flatPosKey(src, key))
		if !ok || s != src || k != key {
			t.Fatalf("split(join(%q, %q)) = %q, %q, %v", src, key, s, k, ok)
		}
	})
}
