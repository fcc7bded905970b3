//go:build unix

package e2e

import (
	"bytes"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"
)

// An agent with queue.encryption keeps no event in clear in its WAL; a
// start with another key is refused with the config exit code and a
// message naming the key file and db rekey, the WAL unchanged; db rekey
// rotates the key, and the agent starts with the new one.
func TestEncryptedWAL(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{port: deadPort(t), api: true, // no engine: rows stay in the WAL
		queueExtra: "  encryption:\n    key-file: config/wal.key\n"})
	for name, fill := range map[string]byte{"config/wal.key": 0x11, "config/wal-new.key": 0x22} {
		key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, 32))
		if err := os.WriteFile(root.path(name), []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root.createFile("in/app.log").lines(makeLines(t.Name(), 0, 50))
	agent := root.startReady()
	eventually(t, 20*time.Second, "50 rows in the WAL", func() bool {
		out, _, _ := root.cli("db", "wal-list", "--limit", "0")
		return strings.Contains(out, "(50 rows)")
	})
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	walPath := root.path("data/wal.db")
	before, err := os.ReadFile(walPath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(before, []byte("quick brown fox")) {
		t.Fatal("the WAL holds an event in clear")
	}
	if out, errOut, code := root.cli("db", "wal-summary"); code != 0 || !strings.Contains(out, "50") {
		t.Fatalf("db wal-summary with the config's key: exit %d\n%s%s", code, out, errOut)
	}

	root.editConfig("key-file: config/wal.key", "key-file: config/wal-new.key")
	p := root.start()
	code := p.wait(t, 30*time.Second)
	msg := p.stderrText()
	if code != 78 || !strings.Contains(msg, root.path("config/wal-new.key")) || !strings.Contains(msg, "db rekey") {
		t.Fatalf("start with another key: exit %d, want 78 naming the key file and db rekey; stderr: %s", code, msg)
	}
	if after, _ := os.ReadFile(walPath); !bytes.Equal(before, after) {
		t.Fatal("the refused start changed the WAL")
	}

	out, errOut, code := root.cli("db", "rekey", "--key-file", "config/wal.key", "--new-key-file", "config/wal-new.key", "--yes")
	if code != 0 {
		t.Fatalf("db rekey: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := root.cli("db", "verify"); code != 0 {
		t.Fatalf("db verify with the new key: exit %d\n%s%s", code, out, errOut)
	}
	agent = root.startReady()
	out, _, _ = root.cli("db", "wal-list", "--limit", "0")
	if code := root.stop(agent); code != 0 || !strings.Contains(out, "(50 rows)") {
		t.Fatalf("after rekey: stop exit %d, rows:\n%s", code, out)
	}
}
