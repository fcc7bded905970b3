//go:build unix

package e2e

import (
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"time"
)

// A WAL truncated to half (a torn copy, a full disk during a restore):
// start refuses it with a message naming the file and `db salvage`,
// without a panic and not with the invalid-config exit code; db verify
// lists the damage; db salvage writes a copy the agent starts on.
func TestDamagedWAL(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{port: deadPort(t), api: true}) // no engine: rows stay in the WAL
	root.createFile("in/app.log").lines(makeLines(t.Name(), 0, 300))
	agent := root.startReady()
	eventually(t, 20*time.Second, "300 rows in the WAL", func() bool {
		out, _, _ := root.cli("db", "wal-list", "--limit", "0")
		return strings.Contains(out, "(300 rows)")
	})
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}

	walPath := root.path("data/wal.db")
	b, err := os.ReadFile(walPath)
	if err != nil {
		t.Fatal(err)
	}
	// bbolt's meta page 0: page size at 16+8, pages in use at 16+40 (host
	// byte order). Half of the used pages go.
	ps := int(binary.NativeEndian.Uint32(b[16+8:]))
	used := int(binary.NativeEndian.Uint64(b[16+40:])) * ps
	if err := os.WriteFile(walPath, b[:used/2], 0o600); err != nil {
		t.Fatal(err)
	}

	p := root.start()
	code := p.wait(t, 30*time.Second)
	msg := p.stderrText()
	if code != 65 {
		t.Fatalf("start on a truncated WAL: exit %d, want 65 (EX_DATAERR: damaged WAL, not a config error, not a crash); stderr: %s", code, msg)
	}
	if strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine ") {
		t.Fatalf("start panicked: %s", msg)
	}
	if !strings.Contains(msg, walPath) || !strings.Contains(msg, "edge-agent db salvage --db-path "+walPath) {
		t.Fatalf("start's error does not name the file and db salvage: %s", msg)
	}

	out, errOut, code := root.cli("db", "verify")
	if code == 0 || !strings.Contains(out, "damaged") || strings.Contains(errOut, "panic") {
		t.Fatalf("db verify on the truncated WAL: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = root.cli("db", "salvage", "--out", "data/wal.salvaged.db")
	if code != 0 {
		t.Fatalf("db salvage: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("db salvage:\n%s", out)
	if !strings.Contains(out, "DAMAGE:") || strings.Contains(out, "rows copied: 0 ") {
		t.Fatalf("salvage report: %s", out)
	}
	if err := os.Rename(root.path("data/wal.salvaged.db"), walPath); err != nil {
		t.Fatal(err)
	}
	agent = root.startReady()
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop after salvage: exit %d", code)
	}
	if out, errOut, code := root.cli("db", "verify"); code != 0 {
		t.Fatalf("db verify after salvage: exit %d\n%s%s", code, out, errOut)
	}
}
