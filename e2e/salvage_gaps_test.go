//go:build unix

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// With agent.account, a WAL block damaged on disk loses its rows to db
// salvage; the salvaged WAL carries gap records ("lost: salvage") for
// them, so that once the agent runs on it and the engine is back, the
// audit of what the engine got finds every number delivered or inside a
// gap record, and exits 0.
func TestSalvageGapRecordsAudit(t *testing.T) {
	t.Parallel()
	const lines = 300
	engine := holdPort(t)
	root := newRoot(t, options{port: engine.port, api: true, account: true})
	// Each line ends in random hex, which the block's compression keeps
	// as it is: the line can be found in the file.
	want := make([]string, lines)
	for i := range want {
		r := make([]byte, 16)
		_, _ = rand.Read(r)
		want[i] = fmt.Sprintf("%s line %06d %x", t.Name(), i, r)
	}
	w := root.createFile("in/app.log")
	agent := root.startReady()
	// Three commits: the middle one is damaged below.
	for i := range 3 {
		w.lines(want[i*lines/3 : (i+1)*lines/3])
		waitCommitted(t, root, "the lines in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == uint64((i+1)*lines/3) })
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	// A line of the middle commit, as its block stores it (the
	// compression keeps some lines' random hex as it is): one bit of every
	// copy of it flipped (bbolt keeps older copies of a page in its free
	// pages) fails the block's checksum.
	walPath := root.path("data/wal.db")
	b, err := os.ReadFile(walPath)
	if err != nil {
		t.Fatal(err)
	}
	var mark []byte
	for _, l := range want[lines/3 : 2*lines/3] {
		if h := []byte(l[len(l)-32:]); bytes.Contains(b, h) {
			mark = h
			break
		}
	}
	if mark == nil {
		t.Fatal("no line of the middle commit found as it was written in the WAL")
	}
	for i := bytes.Index(b, mark); i >= 0; {
		b[i+len(mark)-1] ^= 0x01
		j := bytes.Index(b[i+1:], mark)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if err := os.WriteFile(walPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := root.cli("db", "salvage", "--out", "data/wal.salvaged.db")
	t.Logf("db salvage:\n%s", out)
	if code != 0 || !strings.Contains(out, "GAP: input ") {
		t.Fatalf("db salvage: exit %d, want GAP lines\n%s%s", code, out, errOut)
	}
	if err := os.Rename(root.path("data/wal.salvaged.db"), walPath); err != nil {
		t.Fatal(err)
	}
	engine.release()
	rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
	agent = root.startReady()
	var rep auditDoc
	eventually(t, deliverTimeout, "the audit of what the engine got complete", func() bool {
		out, _, code := root.cli("audit", "--json", rc.out)
		rep = auditDoc{}
		return json.Unmarshal([]byte(out), &rep) == nil && code == 0 && len(rep.Streams) == 1 && rep.Streams[0].Max == lines
	})
	s := rep.Streams[0]
	if s.GapRows == 0 || s.Rows+s.GapRows-s.Duplicates != lines {
		t.Errorf("audit %+v: want %d lines = rows + gap rows", rep, lines)
	}
	out, _, _ = root.cli("audit", rc.out)
	t.Logf("audit:\n%s", out)
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit %d", code)
	}
}
