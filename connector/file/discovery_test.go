package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// TestDiscovery: `**`, plain directories, excludes, and rescans.
func TestDiscovery(t *testing.T) {
	h := newHarness(t, nil)
	h.cfg.Paths = []string{filepath.Join(h.dir, "logs", "**", "*.log"), filepath.Join(h.dir, "plain")}
	h.cfg.Exclude = []string{"*.gz", filepath.Join(h.dir, "logs", "skip", "**")}
	h.cfg.GlobScanInterval = 50 * time.Millisecond
	for _, f := range []string{"logs/a.log", "logs/x/y/b.log", "logs/c.txt", "logs/skip/d.log", "plain/e.any", "plain/sub/f", "plain/g.gz"} {
		must(t, os.MkdirAll(filepath.Dir(h.path(f)), 0o755))
		h.write(f, filepath.Base(f)+"\n")
	}
	h.open()
	got := texts(h.pollAll())
	slices.Sort(got)
	if want := []string{"a.log", "b.log", "e.any", "f"}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	must(t, os.MkdirAll(h.path("logs/new"), 0o755))
	h.write("logs/new/h.log", "h.log\n")
	wantTexts(t, h.pollAll(), "h.log")
}

// TestFairness: with a small poll budget, a busy file cannot starve a
// quiet one (the Java agent fills the budget file by file).
func TestFairness(t *testing.T) {
	h := newHarness(t, nil)
	var big []byte
	for i := 0; i < 5000; i++ {
		big = fmt.Appendf(big, "hot %d\n", i)
	}
	must(t, os.WriteFile(h.path("a-hot.log"), big, 0o644))
	h.write("b-quiet.log", "quiet 1\nquiet 2\n")
	h.open()
	got := h.poll(10)
	quiet := 0
	for _, r := range got {
		if filepath.Base(r.File) == "b-quiet.log" {
			quiet++
		}
	}
	if quiet != 2 {
		t.Fatalf("quiet file got %d of the first 10 events", quiet)
	}
}

// TestMaxOpenFiles: more files than descriptors are all read, and the
// cap holds.
func TestMaxOpenFiles(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxOpenFiles = 2 })
	for i := 0; i < 7; i++ {
		h.write(fmt.Sprintf("f%d.log", i), fmt.Sprintf("f%d-1\nf%d-2\n", i, i))
	}
	h.open()
	n := 0
	for i := 0; i < 200; i++ {
		n += len(h.poll(3))
		if o := h.in.Stats().FilesOpen; o > 2 {
			t.Fatalf("%d files open", o)
		}
	}
	if n != 14 {
		t.Fatalf("read %d lines, want 14", n)
	}
}

// TestFsnotifyWakes: with fsnotify a new file is found before the scan
// interval, Wakeup fires, and Close stops the watcher goroutine (goleak
// in TestMain checks it).
func TestFsnotifyWakes(t *testing.T) {
	dir := t.TempDir()
	cfg := NewDefaultConfig()
	cfg.Paths = []string{filepath.Join(dir, "*.log")}
	cfg.GlobScanInterval = 3_600_000 * time.Millisecond
	in, err := New(cfg, input.Settings{ID: "w"})
	must(t, err)
	must(t, in.Open(context.Background(), input.OpenOptions{FirstStart: true}))
	defer in.Close()
	must(t, os.WriteFile(filepath.Join(dir, "new.log"), []byte("hi\n"), 0o644))
	select {
	case <-in.Wakeup():
	case <-time.After(5 * time.Second):
		t.Fatal("no wakeup")
	}
	var evs []input.Event
	for i := 0; i < 200 && len(evs) == 0; i++ {
		evs, err = in.Poll(context.Background(), evs, 10)
		must(t, err)
		evs = slices.DeleteFunc(evs, func(ev input.Event) bool { return ev.Payload == nil }) // positions only
		if len(evs) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if len(evs) != 1 {
		t.Fatalf("got %d events before the scan interval", len(evs))
	}
}

// TestPollContract: max is honoured, errors after Close, Poll before Open.
func TestPollContract(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "1\n2\n3\n")
	in, err := New(h.cfg, input.Settings{})
	must(t, err)
	if _, err := in.Poll(context.Background(), nil, 1); err != ErrNotOpen {
		t.Fatalf("before open: %v", err)
	}
	must(t, in.Open(context.Background(), input.OpenOptions{FirstStart: true}))
	evs, err := in.Poll(context.Background(), nil, 2)
	if err != nil || len(evs) != 2 {
		t.Fatalf("got %d, %v", len(evs), err)
	}
	if evs, _ := in.Poll(context.Background(), nil, 0); len(evs) != 0 {
		t.Fatal("max 0 returned events")
	}
	must(t, in.Close())
	if _, err := in.Poll(context.Background(), nil, 1); err != ErrClosed {
		t.Fatalf("after close: %v", err)
	}
}

// Java parity §2.5: newly discovered files are read oldest first.
func TestDiscoveryOldestFirst(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a-new.log", "new\n")
	h.write("b-old.log", "old\n")
	past := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(h.path("b-old.log"), past, past))
	h.open()
	wantTexts(t, h.poll(10), "old", "new")
}
