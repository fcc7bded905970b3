package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
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
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root uint64
	_ = db.View(func(tx *bolt.Tx) error { root = uint64(tx.Bucket([]byte("rows")).RootPage()); return nil })
	ps := db.Info().PageSize
	_ = db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pg := b[int(root)*ps:]
	if binary.NativeEndian.Uint16(pg[8:]) != 0x01 || binary.NativeEndian.Uint16(pg[10:]) < 2 {
		t.Fatal("rows root is not a branch page: fixture too small")
	}
	binary.NativeEndian.PutUint64(pg[16+16+8:], binary.NativeEndian.Uint64(pg[16+8:]))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
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
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.opened != nil {
		t.Fatal("the input was opened on a damaged WAL")
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the refused start changed the damaged file")
	}
}
