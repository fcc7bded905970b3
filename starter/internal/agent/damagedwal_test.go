package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/starter/internal/wal/waltest"
)

// damagedWAL writes a WAL with a rows tree of several pages at
// home/data/wal.db and points the second child of the rows root at the
// first, below bbolt, as a stray write would: on that file bbolt's own
// read-write open panics in a goroutine of its own.
func damagedWAL(t *testing.T, home string) string {
	t.Helper()
	path := filepath.Join(home, "data", "wal.db")
	w, err := wal.Open(wal.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]wal.NewRow, 2000)
	for i := range rows {
		rows[i] = wal.NewRow{SourceID: "input-1", Payload: fmt.Appendf(nil, `{"_line":%d,"pad":"%040d"}`, i+1, i)}
	}
	if err := w.Update(func(tx *wal.Tx) error { _, _, err := tx.Append(rows); return err }); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	waltest.BreakRowsBranch(t, path)
	return path
}

// TestDamagedWALRefusedAtStart: start on a damaged WAL ends with an error
// (not a panic, not the invalid-config exit code) that names the file and
// the salvage command, before any input is opened.
func TestDamagedWALRefusedAtStart(t *testing.T) {
	home := t.TempDir()
	path := damagedWAL(t, home)
	before, _ := os.ReadFile(path)
	in := &fakeInput{}
	rt, err := New(newOptions(t, testConfig(t), home, in, newFakeSender(nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = rt.Run(ctx)
	if !errors.Is(err, wal.ErrDamaged) {
		t.Fatalf("Run = %v, want an error wrapping wal.ErrDamaged", err)
	}
	if code := exitcode.For(err); code != exitcode.Damaged {
		t.Fatalf("exit code %d for a damaged WAL", code)
	}
	if want := wal.SalvageCommand(path); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
	if in.isOpened() {
		t.Fatal("the input was opened on a damaged WAL")
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the refused start changed the damaged file")
	}
}
