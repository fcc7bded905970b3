package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/glob"
	"github.com/edge-agent/edge-agent/connector/input"
)

// faultFS is the real file system except that listing the directories in
// fail returns the error given for them, as a directory made unreadable
// for a while, or a process out of descriptors, would. Tests run as root,
// which ignores permissions, so chmod cannot produce these failures.
type faultFS struct {
	glob.OS
	mu   sync.Mutex
	fail map[string]error
	hook func(dir string) // called on every ReadDir, before the fault
}

func (f *faultFS) set(dir string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = make(map[string]error)
	}
	if err == nil {
		delete(f.fail, dir)
		return
	}
	f.fail[dir] = err
}

func (f *faultFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if f.hook != nil {
		f.hook(name)
	}
	f.mu.Lock()
	err := f.fail[name]
	f.mu.Unlock()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f.OS.ReadDir(name)
}

// lineCounts counts deliveries per payload text.
func lineCounts(rs []rec) map[string]int {
	m := make(map[string]int)
	for _, r := range rs {
		m[r.text()]++
	}
	return m
}

// listingFailureCase writes files in two directories, reads them, makes
// one directory unlistable with errno for several scans while its files
// grow, then lets it be listed again: every line must be delivered
// exactly once, and no position forgotten.
func listingFailureCase(t *testing.T, errno error, failDir func(h *harness) string) {
	t.Helper()
	var logs bytes.Buffer
	ffs := &faultFS{}
	h := newHarness(t, func(c *Config) {
		c.MaxOpenFiles = 2 // some files closed, some open, while unlisted
	})
	h.cfg.Paths = []string{filepath.Join(h.dir, "**", "*.log")}
	names := []string{"a/1.log", "a/2.log", "a/3.log", "b/4.log"}
	for _, n := range names {
		must(t, os.MkdirAll(filepath.Dir(h.path(n)), 0o755))
		h.write(n, n+" line 1\n")
	}
	h.open()
	h.in.fsys = ffs
	h.in.rep.log = slog.New(slog.NewTextHandler(&logs, nil))
	got := h.pollAll()
	keys := len(h.saved)
	if keys != len(names) {
		t.Fatalf("%d positions after the first read, want %d", keys, len(names))
	}

	dir := failDir(h)
	ffs.set(dir, errno)
	for i := 2; i <= 4; i++ {
		for _, n := range names {
			h.write(n, fmt.Sprintf("%s line %d\n", n, i))
		}
		got = append(got, h.pollAll()...) // each poll is a scan (interval 1 ms, step 10 ms)
		if len(h.saved) != keys {
			t.Fatalf("%d positions while %s cannot be listed, want %d: positions were forgotten", len(h.saved), dir, keys)
		}
	}
	ffs.set(dir, nil)
	for _, n := range names {
		h.write(n, n+" line 5\n")
	}
	got = append(got, h.pollAll()...)
	got = append(got, h.restart()...)
	got = append(got, h.pollAll()...)

	counts := lineCounts(got)
	for _, n := range names {
		for i := 1; i <= 5; i++ {
			l := fmt.Sprintf("%s line %d", n, i)
			if counts[l] != 1 {
				t.Errorf("%q delivered %d times, want once", l, counts[l])
			}
		}
	}
	if len(counts) != len(names)*5 {
		t.Errorf("%d distinct lines delivered, want %d", len(counts), len(names)*5)
	}
	if n := strings.Count(logs.String(), "cannot list directory"); n != 1 {
		t.Errorf("listing failure logged %d times in one streak, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "dir="+dir) {
		t.Errorf("the warning does not name %s:\n%s", dir, logs.String())
	}
}

// Finding: a directory that cannot be listed for a while (permissions
// changed) made the scan treat its files as deleted: positions forgotten
// and the files read again from 0 once listed.
func TestUnlistableDirKeepsPositions(t *testing.T) {
	listingFailureCase(t, syscall.EACCES, func(h *harness) string { return h.path("a") })
}

// Finding: with the open-files limit reached (EMFILE), every listing
// failed and every file was read again from 0 on recovery.
func TestListingEMFILEKeepsPositions(t *testing.T) {
	listingFailureCase(t, syscall.EMFILE, func(h *harness) string { return h.dir })
}

// The injected error is the one the scanner sees and logs; callers
// recognise it with errors.Is.
func TestFaultFSReportsErrno(t *testing.T) {
	ffs := &faultFS{}
	dir := t.TempDir()
	ffs.set(dir, syscall.EMFILE)
	_, err := ffs.ReadDir(dir)
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("ReadDir: %v, want EMFILE", err)
	}
}

// A failure streak logs once; a new streak after a recovery logs again.
func TestListingWarnOncePerStreak(t *testing.T) {
	var logs bytes.Buffer
	ffs := &faultFS{}
	h := newHarness(t, nil)
	h.write("a.log", "x\n")
	h.open()
	h.in.fsys = ffs
	h.in.rep.log = slog.New(slog.NewTextHandler(&logs, nil))
	count := func() int { return strings.Count(logs.String(), "cannot list directory") }
	ffs.set(h.dir, syscall.EACCES)
	for range 5 {
		h.poll(10)
	}
	if count() != 1 {
		t.Fatalf("first streak logged %d times, want once", count())
	}
	ffs.set(h.dir, nil)
	h.poll(10)
	ffs.set(h.dir, syscall.EACCES)
	for range 5 {
		h.poll(10)
	}
	if count() != 2 {
		t.Fatalf("two streaks logged %d times, want twice", count())
	}
	if h.in.Stats().Errors == 0 {
		t.Fatal("listing failures not counted in Stats().Errors")
	}
}

// Finding: discovery ignored cancellation, so SIGTERM during the first
// scan of a large tree waited for the whole scan. Open must stop early
// and return the context's error.
func TestOpenStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	const files = 500
	for i := range files {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.log", i)), []byte("x\n"), 0o644))
	}
	cfg := NewDefaultConfig()
	cfg.Paths = []string{filepath.Join(dir, "*.log")}
	cfg.UseFsnotify = false
	in, err := New(cfg, input.Settings{ID: "c"})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opens := 0
	in.openFile = func(p string) (*os.File, error) {
		opens++
		if opens == 10 {
			cancel() // SIGTERM arrives in the middle of discovery
		}
		return os.Open(p)
	}
	err = in.Open(ctx, input.OpenOptions{FirstStart: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open: %v, want context.Canceled", err)
	}
	if opens >= files {
		t.Fatalf("discovery opened all %d files after the cancel", opens)
	}
	if in.Stats().FilesOpen != 0 {
		t.Fatalf("%d files left open after a cancelled Open", in.Stats().FilesOpen)
	}
}

// Cancellation is also seen while walking: directories after the cancel
// are not listed.
func TestWalkStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i))
		must(t, os.MkdirAll(sub, 0o755))
		must(t, os.WriteFile(filepath.Join(sub, "a.log"), []byte("x\n"), 0o644))
	}
	cfg := NewDefaultConfig()
	cfg.Paths = []string{filepath.Join(dir, "**", "*.log")}
	cfg.UseFsnotify = false
	in, err := New(cfg, input.Settings{ID: "c"})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lists := 0
	in.fsys = &faultFS{hook: func(string) {
		lists++
		if lists == 3 {
			cancel()
		}
	}}
	err = in.Open(ctx, input.OpenOptions{FirstStart: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open: %v, want context.Canceled", err)
	}
	if lists > 3 {
		t.Fatalf("%d directories listed, the walk went on after the cancel at the 3rd", lists)
	}
}

// A Poll whose scan is cut short by shutdown returns no error: errors
// from Poll are fatal, a stop is not.
func TestPollScanCancelledIsNotAnError(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "x\n")
	h.open()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.in.fsys = &faultFS{hook: func(string) { cancel() }}
	h.clock = h.clock.Add(h.step)
	if _, err := h.in.Poll(ctx, nil, 10); err != nil {
		t.Fatalf("Poll during shutdown: %v", err)
	}
}

// The depth limit is logged where it stops the walk, once however many
// scans hit it, and files above it are read.
func TestTooDeepLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	dir := t.TempDir()
	deep := dir
	for range glob.MaxDepth + 2 {
		deep = filepath.Join(deep, "d")
	}
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(deep, "deep.log"), []byte("deep\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "top.log"), []byte("top\n"), 0o644))
	cfg := NewDefaultConfig()
	cfg.Paths = []string{filepath.Join(dir, "**", "*.log")}
	cfg.ReadFromBeginning = true
	cfg.UseFsnotify = false
	cfg.GlobScanInterval = time.Millisecond
	in, err := New(cfg, input.Settings{ID: "deep", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	must(t, err)
	clock := time.Unix(1_700_000_000, 0)
	in.now = func() time.Time { return clock }
	must(t, in.Open(context.Background(), input.OpenOptions{FirstStart: true}))
	defer in.Close()
	var got []rec
	for range 5 { // five polls, five scans
		clock = clock.Add(10 * time.Millisecond)
		evs, err := in.Poll(context.Background(), nil, 10)
		must(t, err)
		for _, ev := range evs {
			if ev.Payload != nil {
				got = append(got, decodeEvent(t, ev.Payload)...)
			}
		}
	}
	wantTexts(t, got, "top")
	if n := strings.Count(logs.String(), "nested too deep"); n != 1 {
		t.Fatalf("depth limit logged %d times over several scans, want once:\n%s", n, logs.String())
	}
}
