package dbcli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/process"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/starter/internal/wal/waltest"
)

// bigWAL writes a WAL at path with n PENDING rows: enough for a rows tree
// with a branch page.
func bigWAL(t *testing.T, path string, n int) {
	t.Helper()
	w, err := wal.Open(wal.Options{Path: path, Now: func() time.Time { return time.UnixMilli(t0) }})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]wal.NewRow, n)
	for i := range rows {
		rows[i] = wal.NewRow{SourceID: "app", Payload: fmt.Appendf(nil, `{"_line":%d,"pad":"%040d"}`, i+1, i)}
	}
	err = w.Update(func(tx *wal.Tx) error {
		if _, _, err := tx.Append(rows); err != nil {
			return err
		}
		return tx.SavePositions([]wal.PositionUpdate{{SourceID: "app", Key: "/var/log/app.log", State: []byte(`{"offset":42}`)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSalvageCommand(t *testing.T) {
	f := newFixture(t)
	waltest.FlipBlockByte(t, f.walPath(), 5)
	before, _ := os.ReadFile(f.walPath())

	out, err := f.run(t, "verify")
	if err == nil {
		t.Fatal("verify passed a row that fails its checksum")
	}
	mustContain(t, out, "PROBLEM: row 5: block 5: checksum mismatch")

	listing := func() string {
		entries, _ := os.ReadDir(filepath.Join(f.home, "data"))
		return fmt.Sprint(entries)
	}
	dir := listing()
	out, err = f.run(t, "salvage", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "DRY-RUN", "rows copied: 5 (PENDING 2, RECEIVED 0, ACKED 1, DEAD 2)", "NOT COPIED: row 5:", "positions copied: 2")
	if got := listing(); got != dir {
		t.Fatalf("dry run wrote files: %s, before %s", got, dir)
	}

	// Refused while the agent runs (it holds the pid file's lock).
	lock, err := process.AcquirePID(f.pid, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.run(t, "salvage", "--out", "data/wal.salvaged.db"); err == nil || !strings.Contains(err.Error(), "stop the agent before salvage") {
		t.Fatalf("salvage while running: %v", err)
	}
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}

	out, err = f.run(t, "salvage", "--out", "data/wal.salvaged.db")
	if err != nil {
		t.Fatalf("salvage: %v\n%s", err, out)
	}
	dst := filepath.Join(f.home, "data", "wal.salvaged.db")
	mustContain(t, out, "salvaged "+f.walPath()+" into "+dst, "rows copied: 5", "NOT COPIED: row 5:",
		"rows with a damaged key, copied under a new id(pk): 0", "unreadable parts of the file (their rows and positions are lost, not counted above): 0")
	if after, _ := os.ReadFile(f.walPath()); !bytes.Equal(after, before) {
		t.Fatal("salvage changed the damaged file")
	}
	if _, err := f.run(t, "salvage", "--out", "data/wal.salvaged.db"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("salvage over an existing file: %v", err)
	}
	// The copy: rows 1..4 and 6 with their ids, the positions, verify OK.
	out, err = f.run(t, "--db-path", dst, "verify")
	if err != nil {
		t.Fatalf("verify of the copy: %v\n%s", err, out)
	}
	out, _ = f.run(t, "--db-path", dst, "wal-list")
	mustContain(t, out, "(5 rows)", "\n6 ")
	out, _ = f.run(t, "--db-path", dst, "positions")
	mustContain(t, out, "/var/log/app.log", `{"offset":42}`, "(2 positions)")

	if _, err := f.run(t, "salvage"); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Fatalf("salvage without --out: %v", err)
	}
}

// TestDamagedTree: a WAL whose B-tree is damaged makes verify list the
// damage and name salvage (no panic), and salvage copies the readable
// rows.
func TestDamagedTree(t *testing.T) {
	f := &fixture{home: t.TempDir(), env: map[string]string{}}
	f.pid = filepath.Join(f.home, "edge-agent.pid")
	bigWAL(t, f.walPath(), 2000)
	waltest.BreakRowsBranch(t, f.walPath())

	out, err := f.run(t, "verify")
	if err == nil {
		t.Fatal("verify passed a damaged tree")
	}
	// bbolt reports the page referenced twice, or crashes the check on it.
	mustContain(t, out, "PROBLEM: damaged: bbolt", "edge-agent db salvage --db-path "+f.walPath())

	out, err = f.run(t, "salvage", "--out", "data/wal.salvaged.db")
	if err != nil {
		t.Fatalf("salvage: %v\n%s", err, out)
	}
	mustContain(t, out, "DAMAGE: page", "referenced twice")
	out, err = f.run(t, "--db-path", "data/wal.salvaged.db", "verify")
	if err != nil {
		t.Fatalf("verify of the copy: %v\n%s", err, out)
	}
}

// A WAL giving batch ids at claim: salvage says how many copied rows keep
// their id and which sent ids of lost rows got stand-ins.
func TestSalvageClaimIDs(t *testing.T) {
	f := newFixture(t)
	path := f.walPath()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w, err := wal.Open(wal.Options{Path: path, Now: func() time.Time { return time.UnixMilli(t0) }, SendOrderBatchIDs: true, GapFree: true})
	if err != nil {
		t.Fatal(err)
	}
	var sent []wal.Row
	err = w.Update(func(tx *wal.Tx) error {
		for _, n := range []int{2, 1, 1} { // blocks of rows 1-2, 3, 4
			rows := make([]wal.NewRow, n)
			for i := range rows {
				rows[i] = wal.NewRow{SourceID: "app", Payload: []byte(`{"_line":1}`)}
			}
			if _, _, err := tx.Append(rows); err != nil {
				return err
			}
		}
		if sent, err = tx.Claim(3, t0); err != nil {
			return err
		}
		return tx.Release([]uint64{1, 2, 3}, t0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	waltest.FlipBlockByte(t, path, 3)
	out, err := f.run(t, "salvage", "--out", "data/wal.salvaged.db")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "copied rows keeping the batch id their claim gave them: 2",
		"given stand-ins (the engine's watermark passes them): 1",
		fmt.Sprintf("STAND-IN: batch ids %d..%d", sent[2].BatchID, sent[2].BatchID))
}
