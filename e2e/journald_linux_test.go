package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/journald/journaltest"
)

// kill -9 of an agent reading a journal (type journald) and a file at once
// while both keep growing, then a restart: every entry and every line
// arrives (the cursor and the offset were saved with the events),
// journalctl did not outlive the agent, and status lists the journald
// input with its cursor.
func TestJournaldKill9LosesNothing(t *testing.T) {
	skipShort(t)
	tools := journaltest.Tools(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true})
	jdir := root.path("journal")
	if err := os.MkdirAll(jdir, 0o755); err != nil {
		t.Fatal(err)
	}
	root.opts.inputs = fmt.Sprintf("inputs:\n  - id: journal\n    type: journald\n    directory: %q\n    read-from-beginning: true\n"+
		"  - id: files\n    paths: [%q]\n    read-from-beginning: true\n    glob-scan-interval-ms: 200\n", jdir, root.path("in/*.log"))
	root.writeConfig()
	lines := makeLines(t.Name()+"-file", 0, 6000)
	w := root.createFile("in/app.log")
	w.lines(lines[:500])
	const total, chunk = 6000, 500
	want, es := journalEntries(t.Name(), total)
	file := filepath.Join(jdir, "remote.journal")
	tools.Write(t, file, es[:chunk]...)
	agent := root.startReady()

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := chunk; i < total; i += chunk {
			tools.Write(t, file, es[i:i+chunk]...)
			w.lines(lines[i : i+chunk])
			time.Sleep(50 * time.Millisecond) // pacing: the kill comes mid-stream
		}
	}()
	eventually(t, deliverTimeout, "some entries delivered", func() bool {
		return len(journalPayloads(rc.out)) >= 1500
	})
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	atKill := len(journalPayloads(rc.out))
	<-writerDone
	t.Logf("killed with %d distinct entries delivered", atKill)
	if atKill >= total {
		t.Errorf("every entry was delivered before the kill: the test did not kill the agent mid-stream")
	}
	eventually(t, 10*time.Second, "journalctl gone with the agent", func() bool {
		return len(processesNaming(jdir)) == 0
	})

	restarted := root.startReady()
	dups := waitJournalDelivered(t, rc, want)
	d := rc.waitDelivered(lines, deliverTimeout)
	if len(d.missing) > 0 {
		t.Fatalf("file input after kill -9 and restart: %s", d)
	}
	t.Logf("after kill -9 and restart: 0 entries and 0 lines missing, %d entry and %d line duplicates (expected only for rows in flight at the kill)", dups, d.duplicates)

	code, body := root.apiGet(t, "/debug/status")
	var st struct {
		Inputs []struct {
			ID, Type, Cursor string
			LinesRead        int64 `json:"lines_read"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil {
		t.Fatalf("/debug/status: %d %v\n%s", code, err, body)
	}
	if len(st.Inputs) != 2 || st.Inputs[0].Type != "journald" || !strings.HasPrefix(st.Inputs[0].Cursor, "s=") || st.Inputs[0].LinesRead == 0 {
		t.Fatalf("/debug/status inputs: %+v", st.Inputs)
	}
	if out, _, code := root.cli("status"); code != 0 || !strings.Contains(out, "input journal (journald):") || !strings.Contains(out, "cursor s=") {
		t.Fatalf("status (exit %d):\n%s", code, out)
	}
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	eventually(t, 10*time.Second, "journalctl stopped with the agent", func() bool {
		return len(processesNaming(jdir)) == 0
	})
}

// journalEntries returns n journal entries of unit app.service with their
// messages ("<tag> 00000", ...), for journaltest.Tools.Write.
func journalEntries(tag string, n int) ([]string, []journaltest.Entry) {
	msgs := make([]string, n)
	es := make([]journaltest.Entry, n)
	for i := range n {
		msgs[i] = fmt.Sprintf("%s %05d", tag, i)
		es[i] = journaltest.NewEntry(i, "app.service", msgs[i])
	}
	return msgs, es
}

// waitJournalDelivered waits until the receiver got every message of want
// as a journald event and returns the copies beyond the first.
func waitJournalDelivered(t *testing.T, rc *receiver, want []string) int {
	t.Helper()
	var counts map[string]int
	eventually(t, deliverTimeout, fmt.Sprintf("%d journal entries delivered", len(want)), func() bool {
		counts = journalPayloads(rc.out)
		for _, w := range want {
			if counts[w] == 0 {
				return false
			}
		}
		return true
	})
	dups := 0
	for _, w := range want {
		dups += counts[w] - 1
	}
	return dups
}

// journalPayloads counts the MESSAGE of every journald event the receiver
// wrote (objects with _BOOT_ID and payload, alone, in a group, or carried
// as a JSON string).
func journalPayloads(path string) map[string]int {
	counts := map[string]int{}
	b, err := os.ReadFile(path)
	if err != nil {
		return counts
	}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 6 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["_BOOT_ID"]; ok {
				if p, ok := x["payload"].(string); ok {
					counts[p]++
					return
				}
			}
			for _, in := range x {
				walk(in, depth+1)
			}
		case []any:
			for _, in := range x {
				walk(in, depth+1)
			}
		case string:
			if len(x) > 1 && (x[0] == '{' || x[0] == '[') {
				var in any
				if json.Unmarshal([]byte(x), &in) == nil {
					walk(in, depth+1)
				}
			}
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var v any
		if json.Unmarshal(sc.Bytes(), &v) == nil {
			walk(v, 0)
		}
	}
	return counts
}

// processesNaming lists the PIDs whose command line holds s.
func processesNaming(s string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, filepath.Base(filepath.Dir(d)))
		}
	}
	return out
}
