//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Under systemd or in a container the agent's stderr is a pipe, and that is
// where journald and container runtimes collect logs: every line is one JSON
// record, readiness included, and durations carry their unit.
func TestStderrJSONWithoutTerminal(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{port: deadPort(t)}) // no engine: sends fail and are retried
	root.createFile("in/app.log").lines(makeLines(t.Name(), 0, 10))

	cmd := exec.Command(bins.agent, "start")
	cmd.Dir = root.dir
	cmd.Env = root.env()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		// A failed test leaves the agent running: kill it by pid and reap
		// it (Wait again after a clean stop only returns an error).
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})

	type record struct {
		line string
		rec  map[string]any
		err  error
	}
	recs := make(chan record)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(recs)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			r := record{line: sc.Text()}
			r.err = json.Unmarshal(sc.Bytes(), &r.rec)
			select {
			case recs <- r:
			case <-done:
				return
			}
		}
	}()

	// The deadline bounds a broken agent; nothing waits on it otherwise.
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	var ready, retried, stopped, signalled bool
	for {
		var r record
		var open bool
		select {
		case r, open = <-recs:
		case <-deadline.C:
			t.Fatalf("stderr after 30s: ready %v, a retry logged %v, stop logged %v", ready, retried, stopped)
		}
		if !open {
			break
		}
		if r.err != nil {
			t.Fatalf("stderr line is not JSON: %q: %v", r.line, r.err)
		}
		msg, _ := r.rec["msg"].(string)
		switch {
		case strings.HasPrefix(msg, "BOOTSTRAP_READY"):
			ready = r.rec["agent_id"] != nil && r.rec["agent_id"] != ""
		case r.rec["retry_in"] != nil:
			d, _ := r.rec["retry_in"].(string)
			if _, err := time.ParseDuration(d); err != nil {
				t.Fatalf("retry_in is not a duration with a unit: %q", r.line)
			}
			retried = true
		case msg == "edge agent stopped":
			d, _ := r.rec["took"].(string)
			if _, err := time.ParseDuration(d); err != nil {
				t.Fatalf("took is not a duration with a unit: %q", r.line)
			}
			stopped = true
		}
		if ready && retried && !signalled {
			signalled = true
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent did not stop cleanly: %v", err)
	}
	if !ready || !retried || !stopped {
		t.Fatalf("stderr lacked records: BOOTSTRAP_READY %v, a retry %v, the stop summary %v", ready, retried, stopped)
	}
	// The file keeps its copy (log.file, for parity with the Java agent).
	if !root.hasReadyLine() {
		t.Error("log file lacks BOOTSTRAP_READY")
	}
}
