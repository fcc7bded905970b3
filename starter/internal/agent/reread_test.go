package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// fakeRereader is a fakeInput that can re-read "a.log": Reread queues a
// position-only event naming the offset, as the file input does.
type fakeRereader struct {
	*fakeInput
	calls int // touched by Reread only: the loop's goroutine (-race)
}

func (f *fakeRereader) Reread(_ context.Context, path string, offset int64) (input.RereadResult, error) {
	f.calls++
	if path != "a.log" {
		return input.RereadResult{}, fmt.Errorf("reread %s: %w", path, input.ErrNotRead)
	}
	if offset > 100 {
		return input.RereadResult{}, fmt.Errorf("reread %s: offset %d is beyond the file's size, 100 bytes", path, offset)
	}
	f.push(input.Event{Pos: input.Position{Key: "a.log", State: fmt.Appendf(nil, "reread-%d", offset)}})
	return input.RereadResult{Path: path, Identity: "a.log", Requested: offset, Start: offset, Previous: 100, Size: 100, Reread: 100 - offset}, nil
}

// savedPosition reads key's stored position of input id from the running
// agent's WAL.
func savedPosition(t *testing.T, rt *Agent, id, key string) string {
	t.Helper()
	var got string
	err := rt.WAL().View(func(tx *wal.ReadTx) error {
		pos, err := tx.Positions(id)
		got = string(pos[key])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A reread's new position is stored by the loop's next commit, after the
// positions the input handed over before it, and a restart opens the
// input from it.
func TestRereadPositionCommitsAndSurvivesARestart(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t)
	in := &fakeRereader{fakeInput: &fakeInput{}}
	in.push(lineEvents("a.log", 0, 10)...)
	snd := newFakeSender(nil)
	h := startRuntime(t, newOptions(t, cfg, home, in, snd))
	transporttest.Eventually(t, 10*time.Second, "10 acks", func() bool { return h.rt.Snapshot().Acked == 10 })
	id := h.rt.Snapshot().InputID
	if got := h.rt.Rereadable(); !slices.Equal(got, []string{id}) {
		t.Fatalf("Rereadable = %q, want [%s]", got, id)
	}
	if got := savedPosition(t, h.rt, id, "a.log"); got != "9" {
		t.Fatalf("position before = %q, want 9", got)
	}

	out, err := h.rt.Reread(context.Background(), "", "a.log", 40)
	if err != nil {
		t.Fatal(err)
	}
	if out.Input != id || out.Start != 40 || out.Reread != 60 {
		t.Fatalf("outcome = %+v", out)
	}
	transporttest.Eventually(t, 10*time.Second, "the reread position stored", func() bool {
		return savedPosition(t, h.rt, id, "a.log") == "reread-40"
	})

	for _, tc := range []struct {
		name, inputID, path string
		offset              int64
		want                string
		notRead             bool
	}{
		{name: "a path no input reads", path: "b.log", want: "no file input reads it", notRead: true},
		{name: "the input's refusal", path: "a.log", offset: 101, want: "input " + id + ": reread a.log: offset 101 is beyond"},
		{name: "an unknown input id", inputID: "nope", path: "a.log", want: `no input has id "nope"; the inputs are ` + id + " (fake)"},
		{name: "no path", path: " ", want: `no "path"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.rt.Reread(context.Background(), tc.inputID, tc.path, tc.offset)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, input.ErrNotRead) != tc.notRead {
				t.Fatalf("Reread = %v; want %q (not read: %v)", err, tc.want, tc.notRead)
			}
		})
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.Reread(context.Background(), "", "a.log", 0); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("Reread after stop = %v, want not running", err)
	}

	in2 := &fakeRereader{fakeInput: &fakeInput{}}
	h2 := startRuntime(t, newOptions(t, cfg, home, in2, newFakeSender(nil)))
	if got := string(in2.openOptions().Saved["a.log"]); got != "reread-40" {
		t.Fatalf("restart opened a.log from %q, want reread-40", got)
	}
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
}

// An input that cannot re-read is not offered: Rereadable is empty and a
// request says no input can.
func TestRereadWithoutARereader(t *testing.T) {
	home := t.TempDir()
	in := &fakeInput{}
	h := startRuntime(t, newOptions(t, testConfig(t), home, in, newFakeSender(nil)))
	defer func() { _ = h.stop() }()
	if got := h.rt.Rereadable(); len(got) != 0 {
		t.Fatalf("Rereadable = %q, want none", got)
	}
	if _, err := h.rt.Reread(context.Background(), "", "a.log", 0); err == nil || !strings.Contains(err.Error(), "no input can re-read a file") {
		t.Fatalf("Reread = %v", err)
	}
}

// Through the real file input: the lines from the offset reach the
// engine a second time, and a restart reads on from the end, not again.
func TestRereadFileDeliversTheLinesAgain(t *testing.T) {
	eng := startEngine(t, "127.0.0.1:0", standin.Faults{}, nil)
	dir, home := t.TempDir(), t.TempDir()
	logPath := filepath.Join(dir, "app.log")
	appendLines(t, logPath, 0, 100)
	cfg := transportConfig(t, eng.srv.Addr())
	fileConfig(t, cfg, dir)
	h := startRuntime(t, fileOptions(t, cfg, home))
	transporttest.Eventually(t, 20*time.Second, "100 lines", func() bool { return eng.distinct() == 100 })

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	start := int64(strings.Index(string(data), "line 60 of"))
	out, err := h.rt.Reread(context.Background(), "", logPath, start-3) // inside line 59: from line 60
	if err != nil {
		t.Fatal(err)
	}
	if !out.Aligned || out.Start != start || out.Reread != int64(len(data))-start || out.Line != 60 {
		t.Fatalf("outcome = %+v; want from %d, %d bytes again", out, start, int64(len(data))-start)
	}
	transporttest.Eventually(t, 20*time.Second, "lines 60..99 twice", func() bool {
		c := eng.lineCounts(t)
		for _, l := range wantLines(60, 100) {
			if c[l] < 2 {
				return false
			}
		}
		return true
	})
	transporttest.Eventually(t, 5*time.Second, "all acked", func() bool {
		st := h.rt.Snapshot()
		return st.RowsAppended == 140 && st.Queue.Pending == 0 && st.Queue.Sending == 0
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	c := eng.lineCounts(t)
	if c["line 59 of the test file"] != 1 {
		t.Fatalf("line 59 delivered %d times, want once", c["line 59 of the test file"])
	}

	appendLines(t, logPath, 100, 110)
	h2 := startRuntime(t, fileOptions(t, cfg, home))
	transporttest.Eventually(t, 20*time.Second, "the 10 new lines", func() bool { return eng.lineCounts(t)["line 109 of the test file"] == 1 })
	transporttest.Eventually(t, 5*time.Second, "all acked", func() bool {
		st := h2.rt.Snapshot()
		return st.RowsAppended == 10 && st.Queue.Pending == 0
	})
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
	if c := eng.lineCounts(t); c["line 99 of the test file"] != 2 {
		t.Fatalf("after a restart line 99 was delivered %d times, want 2", c["line 99 of the test file"])
	}
}

// With several file inputs the one whose globs match the path re-reads
// it; an input id picks one, and one that does not read the path says so.
func TestRereadPicksTheInputThatReadsThePath(t *testing.T) {
	eng := startEngine(t, "127.0.0.1:0", standin.Faults{}, nil)
	dir, home := t.TempDir(), t.TempDir()
	cfg := transportConfig(t, eng.srv.Addr())
	fileConfig(t, cfg, dir)
	opts := fileOptions(t, cfg, home)
	opts.InputList = nil
	for _, id := range []string{"app", "sys"} {
		if err := os.Mkdir(filepath.Join(dir, id), 0o755); err != nil {
			t.Fatal(err)
		}
		fc := file.NewDefaultConfig()
		fc.Paths = []string{filepath.Join(dir, id, "*.log")}
		fc.ReadFromBeginning = true
		fc.GlobScanInterval = 50 * time.Millisecond
		opts.InputList = append(opts.InputList, InputSpec{ID: id, Type: file.TypeName, Config: fc})
	}
	sysLog := filepath.Join(dir, "sys", "s.log")
	appendLines(t, sysLog, 0, 10)
	h := startRuntime(t, opts)
	defer func() { _ = h.stop() }()
	transporttest.Eventually(t, 20*time.Second, "10 lines", func() bool { return eng.lineCounts(t)["line 9 of the test file"] == 1 })
	if got := h.rt.Rereadable(); !slices.Equal(got, []string{"app", "sys"}) {
		t.Fatalf("Rereadable = %q", got)
	}
	out, err := h.rt.Reread(context.Background(), "", sysLog, 0)
	if err != nil || out.Input != "sys" {
		t.Fatalf("Reread without an id = %+v, %v; want input sys", out, err)
	}
	if _, err := h.rt.Reread(context.Background(), "app", sysLog, 0); !errors.Is(err, input.ErrNotRead) || !strings.Contains(err.Error(), filepath.Join(dir, "app", "*.log")) {
		t.Fatalf("Reread by the other input = %v; want not read, naming its globs", err)
	}
	if out, err := h.rt.Reread(context.Background(), "sys", sysLog, 0); err != nil || out.Input != "sys" {
		t.Fatalf("Reread by id = %+v, %v", out, err)
	}
	transporttest.Eventually(t, 20*time.Second, "the lines a third time", func() bool { return eng.lineCounts(t)["line 9 of the test file"] == 3 })
}
