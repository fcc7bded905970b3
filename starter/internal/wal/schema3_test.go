package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// schema3Fixture writes a closed WAL of nestedPositionsSchema, as a
// development build before the first release left it: buildFixture's
// rows, its positions moved into one bucket per input, plus one position
// whose source id holds the byte 0x00 (allowed in that layout, not in
// this one). It returns the path and the positions a copy keeps.
func schema3Fixture(t *testing.T) (string, map[string]map[string][]byte) {
	t.Helper()
	path := buildFixture(t)
	w, err := Open(Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := readPositions(t, w)
	_ = w.Close()
	tamper(t, path, func(tx *bolt.Tx) error {
		if err := putSchemaVersion(nestedPositionsSchema)(tx); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketPositions); err != nil {
			return err
		}
		pos, err := tx.CreateBucket(bucketPositions)
		if err != nil {
			return err
		}
		for src, kv := range want {
			b, err := pos.CreateBucket([]byte(src))
			if err != nil {
				return err
			}
			for k, v := range kv {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		b, err := pos.CreateBucket([]byte("old\x00input"))
		if err != nil {
			return err
		}
		return b.Put([]byte("/var/log/old.log"), []byte(`{"offset":7}`))
	})
	return path, want
}

// TestOpenRefusesSchema3: every open refuses a file of schema 3 with an
// error naming the file, the version found, the one this build reads and
// the two ways out (drain it with the build that wrote it, or salvage it
// into a new file), and leaves every byte of it as it was.
func TestOpenRefusesSchema3(t *testing.T) {
	path, _ := schema3Fixture(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		_, err := Open(Options{Path: path, ReadOnly: ro})
		if !errors.Is(err, ErrSchemaVersion) {
			t.Fatalf("ro=%v: err = %v, want ErrSchemaVersion", ro, err)
		}
		for _, want := range []string{path, "schema version 3", "reads only version 4", "drain the file with the build that wrote it",
			SalvageCommand(path), "leaves this one unchanged"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ro=%v: error %q lacks %q", ro, err, want)
			}
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused open changed the file")
	}
}

// TestSalvageCarriesSchema3Over: salvage, the way out the error names,
// copies every row (in its status, SENDING as PENDING) and every position
// of a schema-3 file into a new file of schema 4 that opens, reports the
// position schema 4 cannot hold instead of failing, and leaves the source
// unchanged.
func TestSalvageCarriesSchema3Over(t *testing.T) {
	path, wantPos := schema3Fixture(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "wal.v4.db")
	rep, err := Salvage(path, dst, SalvageOptions{Now: newClock(t0).Now})
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("salvage changed its source")
	}
	if rep.Positions != fixPosCount || len(rep.Damage) != 1 || !strings.Contains(rep.Damage[0].String(), `"old\x00input"`) {
		t.Fatalf("report: %d positions, damage %v; want %d and the one 0x00 position", rep.Positions, rep.Damage, fixPosCount)
	}
	want := map[Status]int{StatusDead: fixDead, StatusAcked: fixAcked, StatusPending: fixRows - fixDead - fixAcked}
	for st, n := range want {
		if rep.Rows[st] != n {
			t.Errorf("%s rows copied: %d, want %d", st, rep.Rows[st], n)
		}
	}
	w, err := Open(Options{Path: dst})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got, schema := readPositions(t, w)
	if schema != SchemaVersion || !samePositions(got, wantPos) {
		t.Fatalf("copy: schema %d, positions %q, want %d, %q", schema, got, SchemaVersion, wantPos)
	}
	_ = w.View(func(tx *ReadTx) error {
		rows, err := tx.List(nil, 0, 0)
		if err != nil || len(rows) != fixRows {
			t.Fatalf("copy lists %d rows (%v), want %d", len(rows), err, fixRows)
		}
		ids := make([]uint64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		if !slices.Equal(ids, seq(1, fixRows)) {
			t.Errorf("copy's row ids are not 1..%d", fixRows)
		}
		return nil
	})
	if probs, _, err := w.Verify(0); err != nil || len(probs) != 0 {
		t.Fatalf("verify of the copy: %v %v", probs, err)
	}
}
