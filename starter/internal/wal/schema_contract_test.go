package wal

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// The self-upgrade's WAL contract rests on this rule: a WAL of a schema
// version this build does not read is refused by every open, read-write
// too, and not one byte of it changes. A newer build's WAL is never
// rewritten by an older one, nor an older one's converted behind a trial.
func TestOpenOfAnotherSchemaChangesNothing(t *testing.T) {
	for _, v := range []uint32{SchemaVersion + 1, nestedPositionsSchema, nestedPositionsSchema - 1} {
		w := openTest(t, nil)
		path := w.Path()
		_ = w.Close()
		tamper(t, path, putSchemaVersion(v))
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(Options{Path: path}); !errors.Is(err, ErrSchemaVersion) {
			t.Fatalf("schema %d: err = %v, want ErrSchemaVersion", v, err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("schema %d: the refused open changed the file", v)
		}
		tamper(t, path, putSchemaVersion(SchemaVersion))
	}
}
