package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// fileConfig reads dir/*.log from the beginning through the real file input.
func fileConfig(t testing.TB, cfg *testCfg, dir string) {
	fc := file.NewDefaultConfig()
	fc.Paths = []string{filepath.Join(dir, "*.log")}
	fc.ReadFromBeginning = true
	fc.GlobScanInterval = 50 * time.Millisecond
	cfg.InputType = file.TypeName
	cfg.Input = fc
}

func fileOptions(t testing.TB, cfg *testCfg, home string) Options {
	opts := ingressOptions(t, cfg, home, nil)
	opts.Inputs = input.NewRegistry(file.NewFactory())
	return opts
}

func appendLines(t testing.TB, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b []byte
	for i := from; i < to; i++ {
		b = fmt.Appendf(b, "line %d of the test file\n", i)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// lineCounts maps each delivered line's text to how often it arrived.
func (e *engine) lineCounts(t testing.TB) map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for rec, n := range e.got {
		var ev struct {
			Payload string `json:"payload"`
			File    string `json:"_file"`
			Line    int    `json:"_line"`
		}
		if err := json.Unmarshal([]byte(rec), &ev); err != nil {
			t.Fatalf("record %q is not the event JSON: %v", rec, err)
		}
		if want := fmt.Sprintf("line %d of the test file", ev.Line-1); ev.Payload != want {
			t.Fatalf("record %q: payload does not match its line number", rec)
		}
		out[ev.Payload] += n
	}
	return out
}

func wantLines(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("line %d of the test file", i))
	}
	return out
}

// Every line of a file is delivered at least once, exactly as written,
// through faults; a restart re-sends nothing that was acked.
func TestFileToIngressEveryLineAtLeastOnce(t *testing.T) {
	eng := startEngine(t, "127.0.0.1:0", standin.Faults{RetryEvery: 13, QueueFullEvery: 29, QueueFullDelay: time.Millisecond, CutAfter: 400}, nil)
	dir, home := t.TempDir(), t.TempDir()
	logPath := filepath.Join(dir, "app.log")
	appendLines(t, logPath, 0, 2000)
	cfg := transportConfig(t, eng.srv.Addr())
	fileConfig(t, cfg, dir)

	h := startRuntime(t, fileOptions(t, cfg, home))
	appendLines(t, logPath, 2000, 2500) // written while running
	transporttest.Eventually(t, 20*time.Second, "2500 lines", func() bool { return eng.distinct() == 2500 })
	transporttest.Eventually(t, 5*time.Second, "all acked", func() bool {
		st := h.rt.Snapshot()
		return st.Queue.Pending == 0 && st.Queue.Sending == 0 && st.RowsAppended == 2500
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if st := h.rt.Snapshot().Input; st == nil || lines(st) != 2500 {
		t.Fatalf("input stats = %+v, want 2500 lines", st)
	}
	before := eng.lineCounts(t)
	for _, l := range wantLines(0, 2500) {
		if before[l] == 0 {
			t.Fatalf("%q never delivered", l)
		}
	}

	// Restart on the same WAL: only the new lines are sent.
	appendLines(t, logPath, 2500, 3000)
	h2 := startRuntime(t, fileOptions(t, cfg, home))
	transporttest.Eventually(t, 20*time.Second, "3000 lines", func() bool { return eng.distinct() == 3000 })
	transporttest.Eventually(t, 5*time.Second, "all acked", func() bool {
		st := h2.rt.Snapshot()
		return st.RowsAppended == 500 && st.Queue.Pending == 0 && st.Queue.Sending == 0
	})
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
	after := eng.lineCounts(t)
	for _, l := range wantLines(0, 2500) {
		if after[l] != before[l] {
			t.Fatalf("%q re-sent after the restart (%d → %d)", l, before[l], after[l])
		}
	}
}

// lines is the summed lines_read of a snapshot's inputs.
func lines(d *component.Description) int64 {
	n, _ := d.Value(input.KeyLinesRead)
	return n
}
