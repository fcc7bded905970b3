//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestProcessingRedactsFoldsAndFilters runs the built agent with a chain
// parse → redact → dedup → filter on a file holding secrets, debug chatter
// and a storm of one repeated line, against the engine model. No secret
// arrives, no debug line arrives, the storm arrives as one row with its
// count, and a restart reads nothing again.
func TestProcessingRedactsFoldsAndFilters(t *testing.T) {
	rc := startReceiver(t, ckptToken, modelArgs("")...)
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"level":"info","i":%d,"msg":"user u%d@example.com paid with 4111 1111 1111 1111, password=hunter%d"}`, i, i, i))
	}
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"level":"debug","i":%d,"msg":"noise"}`, i))
	}
	for range 2000 {
		lines = append(lines, `{"level":"error","msg":"disk full on /dev/sda1"}`)
	}
	root := newRoot(t, options{port: rc.port, api: true})
	root.opts.inputs = fmt.Sprintf(`input:
  type: file
  paths: [%q]
  read-from-beginning: true
  glob-scan-interval-ms: 200
  processors:
    - parse: {format: json}
    - redact: {detectors: [email, credit-card, secret-pair], action: mask}
    - dedup: {window-ms: 3000}
    - drop: 'payload.level == "debug"'
`, root.path("in/*.log"))
	root.writeConfig()
	if out, stderr, code := root.cli("config", "check", root.configPath()); code != 0 {
		t.Fatalf("config check: exit %d\n%s%s", code, out, stderr)
	}
	w := root.createFile("in/app.log")
	w.lines(lines)
	agent := root.startReady()

	var rows []map[string]any
	eventually(t, 60*time.Second, "21 rows committed by the engine model", func() bool {
		rows = committedEvents(t, rc.out)
		return len(rows) >= 21
	})
	raw, err := os.ReadFile(rc.out)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"@example.com", "4111 1111 1111 1111", "hunter"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("%q reached the engine", secret)
		}
	}
	infos, storms := 0, 0
	for _, ev := range rows {
		p, _ := ev["payload"].(map[string]any)
		switch p["level"] {
		case "info":
			infos++
			if msg, _ := p["msg"].(string); !strings.Contains(msg, "***************1111") {
				t.Errorf("card not masked to its last 4 digits: %q", msg)
			}
		case "error":
			storms++
			if n, _ := ev["_repeats"].(float64); n != 2000 {
				t.Errorf("storm row has _repeats %v, want 2000", ev["_repeats"])
			}
		default:
			t.Errorf("unexpected row %v", ev)
		}
	}
	if infos != 20 || storms != 1 {
		t.Errorf("rows: %d info, %d storm; want 20 and 1", infos, storms)
	}

	// Status shows the counters; then a restart reads nothing again.
	out, _, code := root.cli("status")
	if code != 0 || !strings.Contains(out, "[2] dedup in 2050 out 51 folded 1999") || !strings.Contains(out, "[3] drop in 51 out 21 dropped 30") ||
		!strings.Contains(out, "redacted credit-card 20 redacted email 20 redacted secret-pair 20") {
		t.Errorf("status (exit %d) lacks the processors' counts:\n%s", code, out)
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("agent stop exit code %d", code)
	}
	before := len(committedEvents(t, rc.out))
	agent = root.startReady()
	waitStatus(t, root, 30*time.Second, "the file read to its end and the WAL empty", func(d ckptDoc) bool {
		return d.readAll() && d.inWAL() == 0
	})
	// Anything re-read would be held by dedup for its 3 s window: wait
	// them out before the last look.
	time.Sleep(4 * time.Second)
	out, _, _ = root.cli("status")
	if !strings.Contains(out, "[0] parse in 0 out 0") {
		t.Errorf("after the restart the chain saw events again:\n%s", out)
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("agent stop exit code %d", code)
	}
	if after := len(committedEvents(t, rc.out)); after != before {
		t.Errorf("the restart delivered %d rows again", after-before)
	}
}

// committedEvents are the event objects (those with _file) in the
// receiver's out file.
func committedEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var v any
		if json.Unmarshal(sc.Bytes(), &v) != nil {
			continue
		}
		out = appendEvents(out, v, 0)
	}
	return out
}

func appendEvents(out []map[string]any, v any, depth int) []map[string]any {
	if depth > 6 {
		return out
	}
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["_file"]; ok {
			return append(out, x)
		}
		for _, inner := range x {
			out = appendEvents(out, inner, depth+1)
		}
	case []any:
		for _, inner := range x {
			out = appendEvents(out, inner, depth+1)
		}
	case string:
		if len(x) > 1 && x[0] == '{' {
			var inner any
			if json.Unmarshal([]byte(x), &inner) == nil {
				out = appendEvents(out, inner, depth+1)
			}
		}
	}
	return out
}
