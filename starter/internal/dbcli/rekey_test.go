package dbcli

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

func writeKey(t *testing.T, home, name string, fill byte) (string, []byte) {
	t.Helper()
	k := bytes.Repeat([]byte{fill}, wal.KeySize)
	p := filepath.Join(home, name)
	if err := os.WriteFile(p, []byte(base64.StdEncoding.EncodeToString(k)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, k
}

// TestRekeyAndKeyFile: db rekey encrypts the fixture's clear WAL, the
// read commands then need the key (--key-file or the config's), and a
// second rekey rotates it.
func TestRekeyAndKeyFile(t *testing.T) {
	f := newFixture(t)
	_, keyA := writeKey(t, f.home, "a.key", 0xaa)
	pathB, _ := writeKey(t, f.home, "b.key", 0xbb)
	if _, err := f.run(t, "rekey", "--new-key-file", "a.key"); err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("rekey without --yes: %v", err)
	}
	out, err := f.run(t, "rekey", "--new-key-file", "a.key", "--yes")
	if err != nil || !strings.Contains(out, "2 positions, 3 blocks re-sealed") {
		t.Fatalf("rekey: %v\n%s", err, out)
	}
	if _, err := f.run(t, "wal-summary"); !errors.Is(err, wal.ErrKey) {
		t.Fatalf("wal-summary without the key: %v", err)
	}
	if out, err := f.run(t, "wal-show", "--id", "5", "--key-file", "a.key"); err != nil || !strings.Contains(out, `{"_line":5}`) {
		t.Fatalf("wal-show --key-file: %v\n%s", err, out)
	}
	f.cfg = &Config{QueuePath: filepath.Join(f.home, "data", "wal.db"), Encryption: wal.Encryption{KeyFile: "a.key", Key: keyA}}
	if out, err := f.run(t, "verify"); err != nil {
		t.Fatalf("verify with the config's key: %v\n%s", err, out)
	}
	if out, err := f.run(t, "rekey", "--new-key-file", "b.key", "--yes"); err != nil || !strings.Contains(out, pathB) {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	if _, err := f.run(t, "verify"); !errors.Is(err, wal.ErrKey) || !strings.Contains(err.Error(), "a.key") {
		t.Fatalf("verify with the old key: %v", err)
	}
	out, err = f.run(t, "salvage", "--dry-run", "--key-file", "b.key")
	if err != nil || !strings.Contains(out, "rows copied: 6") {
		t.Fatalf("salvage --key-file: %v\n%s", err, out)
	}
}
