//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// useConsole switches the generated agent.yaml to output.type console, with
// JSON payloads and multiline groups: a line starting with a space continues
// the event before it.
func (r *agentRoot) useConsole() {
	r.t.Helper()
	r.editConfig(
		"  type: transport\n", "  type: console\n",
		"  glob-scan-interval-ms: 200\n", `  glob-scan-interval-ms: 200
  multiline:
    pattern: '^\S'
    match: after
    flush-idle-timeout-ms: 100
  output-format:
    type: json
`)
}

// consoleEvent is the event the file input makes of one line, as decoded
// from JSON, without _ts (the time it was read).
func consoleEvent(t *testing.T, index int, file string, line, offset int64, payload string) map[string]any {
	t.Helper()
	var p any
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		p = payload
	}
	return map[string]any{"_index": float64(index), "_file": file, "_line": float64(line), "_offset": float64(offset), "payload": p}
}

// dropTS removes _ts from a decoded event or group after checking it is a
// positive number.
func dropTS(t *testing.T, v any) any {
	t.Helper()
	switch e := v.(type) {
	case []any:
		for i := range e {
			e[i] = dropTS(t, e[i])
		}
	case map[string]any:
		if ts, ok := e["_ts"].(float64); !ok || ts <= 0 {
			t.Errorf("event without a positive _ts: %v", e)
		}
		delete(e, "_ts")
	}
	return v
}

// output.type console: stdout holds the events and nothing else, each one
// line of JSON (a multiline group is one array line), so `start | jq .`
// works without a terminal. Logs go to stderr and the log file, never
// stdout.
func TestConsoleWritesNDJSON(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{})
	root.useConsole()
	lines := []string{
		"START one",
		"  at frame a",
		"  at frame b",
		`{"level":"info","msg":"hi \"there\"","n":1}`,
		"plain é \\ \"quoted\"",
	}
	root.createFile("in/app.log").lines(lines)
	file := root.path("in/app.log")
	var ends []int64
	var off int64
	for _, l := range lines {
		off += int64(len(l)) + 1
		ends = append(ends, off)
	}
	want := []any{
		[]any{
			consoleEvent(t, 0, file, 1, ends[0], lines[0]),
			consoleEvent(t, 1, file, 2, ends[1], lines[1]),
			consoleEvent(t, 2, file, 3, ends[2], lines[2]),
		},
		consoleEvent(t, 0, file, 4, ends[3], lines[3]),
		consoleEvent(t, 0, file, 5, ends[4], lines[4]),
	}
	// Round-trip through JSON so both sides hold the same types.
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var wantDecoded []any
	if err := json.Unmarshal(wantJSON, &wantDecoded); err != nil {
		t.Fatal(err)
	}

	agent := root.startReady()
	eventually(t, 20*time.Second, "3 events on stdout", func() bool {
		return strings.Count(readText(agent.stdout), "\n") >= len(want)
	})
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}

	out := readText(agent.stdout)
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("stdout does not end with a newline: %q", out)
	}
	var got []any
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("stdout line %d is not one JSON value (%v): %q", i+1, err, line)
		}
		got = append(got, dropTS(t, v))
	}
	if !reflect.DeepEqual(got, wantDecoded) {
		gotJSON, _ := json.Marshal(got)
		t.Fatalf("stdout events\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

// startPiped starts `edge-agent start` with stdout on a pipe whose read
// end is returned; stderr goes to a file. The cleanup kills it by pid.
func (r *agentRoot) startPiped() (*proc, *os.File) {
	r.t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		r.t.Fatal(err)
	}
	p := &proc{name: "edge-agent", stderr: filepath.Join(r.t.TempDir(), "edge-agent.stderr"), done: make(chan struct{})}
	stderr, err := os.Create(p.stderr)
	if err != nil {
		r.t.Fatal(err)
	}
	p.cmd = exec.Command(bins.agent, "start")
	p.cmd.Dir, p.cmd.Env = r.dir, r.env()
	p.cmd.Stdout, p.cmd.Stderr = pw, stderr
	if err := p.cmd.Start(); err != nil {
		r.t.Fatalf("start edge-agent: %v", err)
	}
	// Only the agent may hold the write end, or closing the read end would
	// not break its pipe.
	pw.Close()
	stderr.Close()
	go func() {
		err := p.cmd.Wait()
		p.mu.Lock()
		p.code = exitCode(err)
		p.mu.Unlock()
		close(p.done)
	}()
	r.t.Cleanup(func() {
		pr.Close()
		p.kill()
		if r.t.Failed() {
			r.t.Logf("edge-agent stderr:\n%s", tail(p.stderr, 40))
		}
	})
	return p, pr
}

// When stdout's reader exits (jq quit), the agent neither dies of SIGPIPE
// nor drops events: the failed write is an unavailable output, logged, and
// the rows stay in the WAL for the next run.
func TestConsoleReaderGone(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{})
	root.editConfig("  type: transport\n", "  type: console\n")
	w := root.createFile("in/app.log")
	w.lines(makeLines(t.Name(), 0, 1))
	agent, stdout := root.startPiped()
	root.waitReady(agent, 0)
	first, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !json.Valid([]byte(first)) {
		t.Fatalf("first stdout line %q, %v", first, err)
	}
	stdout.Close()

	later := makeLines(t.Name(), 1, 5)
	w.lines(later)
	eventually(t, 20*time.Second, "the failed write in the log", func() bool {
		if !agent.running() {
			t.Fatalf("agent exited (code %d) once stdout's reader had gone", agent.wait(t, time.Second))
		}
		return strings.Contains(root.logText(), "console output unavailable: write")
	})
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}

	out, errOut, code := root.cli("db", "wal-summary")
	if code != 0 {
		t.Fatalf("db wal-summary: exit %d\n%s%s", code, out, errOut)
	}
	counts := walStatusCounts(t, out)
	if kept := counts["PENDING"] + counts["SENDING"]; kept != len(later) || counts["DEAD"] != 0 {
		t.Errorf("%d rows kept, want the %d lines written after the reader left:\n%s", kept, len(later), out)
	}
	if !strings.Contains(root.logText(), "broken pipe") {
		t.Errorf("the logged write error does not name the broken pipe")
	}
}
