package file

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

func mustStat(t *testing.T, p string) fileID {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := idOf(p, fi)
	return id
}

func wantTexts(t *testing.T, got []rec, want ...string) {
	t.Helper()
	if !slices.Equal(texts(got), want) {
		t.Fatalf("got %q, want %q", texts(got), want)
	}
}

// TestInodeReuse: a saved position whose device+inode now belong to a
// file with other content is dropped and the file read from 0.
func TestInodeReuse(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "brand new content\nsecond\n")
	id := mustStat(t, h.path("a.log"))
	old := savedState{V: 1, Path: h.path("gone.log"), Dev: id.dev, Ino: id.ino, FPLen: 12, FP: "0123456789abcdef", Offset: 18, Line: 1}
	b, _ := json.Marshal(old)
	h.saved["old-key"] = b
	h.first = false
	h.open()
	wantTexts(t, h.pollAll(), "brand new content", "second")
	if _, ok := h.saved["old-key"]; ok {
		t.Fatal("position of the replaced file was not forgotten")
	}
	if len(h.saved) != 1 {
		t.Fatalf("saved = %v", h.saved)
	}
}

// TestIdenticalHeaders: two files whose first bytes are equal (beyond
// the fingerprint) are still two files.
func TestIdenticalHeaders(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FingerprintBytes = 16 })
	header := strings.Repeat("HEADER-LINE-0123456789\n", 3)
	h.write("a.log", header+"only in a\n")
	h.write("b.log", header+"only in b\n")
	h.open()
	got := h.pollAll()
	if len(got) != 8 || len(h.saved) != 2 {
		t.Fatalf("got %d lines, %d positions", len(got), len(h.saved))
	}
	h.write("a.log", "more a\n")
	h.restart()
	wantTexts(t, h.pollAll(), "more a")
}

// TestEmptyAndTinyFiles: files empty or shorter than the fingerprint are
// read, keep their identity while they grow, and resume after restart.
func TestEmptyAndTinyFiles(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FingerprintBytes = 64; c.ReadFromBeginning = false })
	h.write("empty.log", "")
	h.write("tiny.log", "a\n")
	h.open()
	if got := h.pollAll(); len(got) != 0 {
		t.Fatalf("tail from end read %v", got)
	}
	h.write("empty.log", "first\n")
	h.write("tiny.log", "b\n")
	wantTexts(t, h.pollAll(), "first", "b")
	h.write("tiny.log", strings.Repeat("c", 100)+"\n")
	h.restart()
	h.write("tiny.log", "d\n")
	got := h.pollAll()
	wantTexts(t, got[1:], "d")
	if got[1].Line != 3 {
		t.Fatalf("line = %d, want 3 (a was skipped at first start)", got[1].Line)
	}
}

// TestSymlinkSwap: a symlink is followed (identity of its target); when
// it is switched to a new target, the old target is read on until quiet
// for close-inactive, then forgotten, and the new one is read from 0.
func TestSymlinkSwap(t *testing.T) {
	h := newHarness(t, nil)
	must(t, os.Mkdir(h.path("real"), 0o755))
	h.write("real/a.txt", "a1\n")
	must(t, os.Symlink(h.path("real/a.txt"), h.path("current.log")))
	h.open()
	wantTexts(t, h.pollAll(), "a1")
	h.write("real/a.txt", "a2\n")
	h.write("real/b.txt", "b1\n")
	must(t, os.Remove(h.path("current.log")))
	must(t, os.Symlink(h.path("real/b.txt"), h.path("current.log")))
	got := h.pollAll()
	wantTexts(t, got, "a2", "b1")
	if got[1].File != h.path("current.log") {
		t.Fatalf("_file = %s, want the matched name", got[1].File)
	}
	h.clock = h.clock.Add(h.cfg.CloseInactive)
	h.pollAll()
	if len(h.saved) != 1 {
		t.Fatalf("old target still has a position: %v", h.saved)
	}
}

// TestRenameRotation: the old file is read to its end, then the new one
// from 0, without loss or duplicates, even when the rotated name is
// outside the globs.
func TestRenameRotation(t *testing.T) {
	h := newHarness(t, nil)
	h.write("app.log", "1\n2\n")
	h.open()
	wantTexts(t, h.pollAll(), "1", "2")
	h.write("app.log", "3\n")
	must(t, os.Rename(h.path("app.log"), h.path("app.old")))
	h.write("app.log", "new1\n")
	wantTexts(t, h.pollAll(), "3", "new1")
	if s := h.in.Stats(); s.Rotations != 1 {
		t.Fatalf("rotations = %d", s.Rotations)
	}
	// The application may still write to the old file: it is kept, then
	// forgotten once quiet for close-inactive.
	if len(h.saved) != 2 {
		t.Fatalf("positions = %d, want both files while the old one may still grow", len(h.saved))
	}
	h.clock = h.clock.Add(h.cfg.CloseInactive)
	h.pollAll()
	if len(h.saved) != 1 {
		t.Fatalf("positions = %d, want the old file forgotten after close-inactive", len(h.saved))
	}
}

// An application writes on to its rotated log until it reopens it, which
// may be long after the rename (logrotate without copytruncate, the app
// told by a cron job). With the rotated name outside the globs, those
// lines must still be read; the file is forgotten only once quiet for
// close-inactive.
func TestRenamedOutOfGlobsIsReadUntilInactive(t *testing.T) {
	h := newHarness(t, nil)
	h.write("app.log", "1\n")
	h.open()
	wantTexts(t, h.pollAll(), "1")
	must(t, os.Rename(h.path("app.log"), h.path("app.log.1")))
	// Many scans pass (1 ms apart, 10 ms per poll) with nothing written.
	for range 50 {
		h.poll(64)
	}
	h.write("app.log.1", "late\n")
	wantTexts(t, h.pollAll(), "late")
	if h.in.Stats().FilesOpen != 1 {
		t.Fatalf("open files = %d, want the renamed file still open", h.in.Stats().FilesOpen)
	}
	h.clock = h.clock.Add(h.cfg.CloseInactive)
	h.pollAll()
	if len(h.saved) != 0 || h.in.Stats().FilesOpen != 0 {
		t.Fatalf("after close-inactive: positions %v, open %d; want it forgotten", h.saved, h.in.Stats().FilesOpen)
	}
}

// TestCopyTruncate: the Java agent misses this (inode only); here a
// shrunk file restarts at 0, and a position-only reset is emitted.
func TestCopyTruncate(t *testing.T) {
	h := newHarness(t, nil)
	h.write("app.log", "old line one\nold line two\n")
	h.open()
	h.pollAll()
	must(t, os.Truncate(h.path("app.log"), 0))
	h.write("app.log", "fresh\n")
	got := h.pollAll()
	wantTexts(t, got, "fresh")
	if got[0].Offset != 6 || got[0].Line != 1 {
		t.Fatalf("after truncation: %+v", got[0])
	}
	// Rewritten past the old offset before the reader looked: the
	// fingerprint still tells.
	must(t, os.Truncate(h.path("app.log"), 0))
	h.write("app.log", "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n")
	wantTexts(t, h.pollAll(), strings.Repeat("X", 42))
	if s := h.in.Stats(); s.Truncations != 2 {
		t.Fatalf("truncations = %d", s.Truncations)
	}
}

// TestDeleteFinishesOpenFile: a deleted file is read to its end through
// the open descriptor, then its position is forgotten.
func TestDeleteFinishesOpenFile(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "1\n")
	h.open()
	h.pollAll()
	h.write("a.log", "2\n")
	must(t, os.Remove(h.path("a.log")))
	wantTexts(t, h.pollAll(), "2")
	if len(h.saved) != 0 || h.in.Stats().FilesOpen != 0 {
		t.Fatalf("after delete: saved %v, open %d", h.saved, h.in.Stats().FilesOpen)
	}
}

// TestFirstStartTail: read-from-beginning false tails files present at
// the first start from the end of their last complete line (a position-
// only event records it), and reads files found later from 0 — the Java
// agent tails those from EOF and loses their head.
func TestFirstStartTail(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ReadFromBeginning = false })
	h.write("a.log", "old1\nold2\npart")
	h.open()
	evs, err := h.in.Poll(t.Context(), nil, 10)
	must(t, err)
	// Beside the tail's position, the record of the patterns it was
	// taken under (a path added later tails its own files too).
	h.apply(evs)
	if _, ok := h.saved[patternsKey]; !ok {
		t.Fatalf("no record of the patterns in %q", h.saved)
	}
	evs = slices.DeleteFunc(evs, func(ev input.Event) bool { return ev.Pos.Key == patternsKey })
	if len(evs) != 1 || evs[0].Payload != nil {
		t.Fatalf("want one position-only event, got %d", len(evs))
	}
	var st savedState
	must(t, json.Unmarshal(evs[0].Pos.State, &st))
	if st.Offset != 10 {
		t.Fatalf("tail offset %d, want 10 (end of the last complete line)", st.Offset)
	}
	h.apply(evs)
	h.write("a.log", "ial\n")
	h.write("later.log", "head of a new file\n")
	wantTexts(t, h.pollAll(), "partial", "head of a new file")
	h.restart() // FirstStart is false now
	h.write("third.log", "x\n")
	wantTexts(t, h.pollAll(), "x")
}

// Java parity §2.3: a stored position is restored, with its line number;
// it wins over read-from-beginning.
func TestRestoreOffsetAndLine(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "line1\nline2\n")
	h.open()
	h.pollAll()
	h.write("a.log", "line3\n")
	h.restart()
	got := h.pollAll()
	wantTexts(t, got, "line3")
	if got[0].Line != 3 || got[0].Offset != 18 {
		t.Fatalf("got %+v", got[0])
	}
}

// Java parity §2.2: after close-inactive the file is closed; data added
// later is read once it is rediscovered, earlier lines are not re-read.
func TestCloseInactiveReopens(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CloseInactive = 50 * time.Millisecond })
	h.write("a.log", "first\n")
	h.open()
	wantTexts(t, h.pollAll(), "first")
	for i := 0; i < 10; i++ {
		h.poll(10)
	}
	if n := h.in.Stats().FilesOpen; n != 0 {
		t.Fatalf("files open = %d after close-inactive", n)
	}
	h.write("a.log", "second\n")
	wantTexts(t, h.pollAll(), "second")
}

// Java parity §2.1: a partial line is held until its newline arrives and
// then delivered whole, once.
func TestPartialLine(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "partial")
	h.open()
	if got := h.pollAll(); len(got) != 0 {
		t.Fatalf("partial delivered: %v", got)
	}
	h.write("a.log", " line\n")
	wantTexts(t, h.pollAll(), "partial line")
	h.write("a.log", "unfinished")
	h.restart() // held bytes are re-read from the saved offset
	h.write("a.log", " now\n")
	wantTexts(t, h.pollAll(), "unfinished now")
}

// Java parity §2.4 with the weakness fixed: with on-error skip an
// unreadable file is logged and skipped, others keep flowing, and it is
// read once readable again.
func TestOnErrorSkip(t *testing.T) {
	h := newHarness(t, nil)
	h.write("bad.log", "b1\n")
	h.write("good.log", "g1\n")
	h.open()
	h.in.openFile = func(p string) (*os.File, error) {
		if filepath.Base(p) == "bad.log" {
			return nil, &os.PathError{Op: "open", Path: p, Err: syscall.EACCES}
		}
		return os.Open(p)
	}
	// bad.log was opened by Open already; close it to force a reopen.
	for _, tr := range h.in.ring {
		if filepath.Base(tr.path) == "bad.log" {
			h.in.set.closeFile(tr)
			tr.life.pending()
		}
	}
	wantTexts(t, h.pollAll(), "g1")
	if h.in.Stats().Errors == 0 {
		t.Fatal("error not counted")
	}
	h.in.openFile = os.Open
	h.write("bad.log", "b2\n")
	wantTexts(t, h.pollAll(), "b1", "b2")
}

// on-error fail: the same problem stops the input with an error naming
// the file.
func TestOnErrorFail(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.OnError = "fail" })
	h.write("bad.log", "b1\n")
	in, err := New(h.cfg, inputSettings())
	must(t, err)
	in.openFile = func(p string) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: p, Err: syscall.EACCES}
	}
	err = in.Open(t.Context(), openOpts(true))
	if err == nil || !strings.Contains(err.Error(), "bad.log") || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("err = %v", err)
	}
}

// A watched file replaced by a directory: skip finishes the old file and
// goes on; fail reports it.
func TestReplacedByDirectory(t *testing.T) {
	for _, mode := range []string{"skip", "fail"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.OnError = mode })
			h.write("a.log", "1\n")
			h.write("b.log", "x\n")
			h.open()
			h.pollAll()
			h.write("a.log", "2\n")
			must(t, os.Remove(h.path("a.log")))
			must(t, os.Mkdir(h.path("a.log"), 0o755))
			evs, err := h.in.Poll(t.Context(), nil, 10)
			if mode == "fail" {
				if err == nil || !strings.Contains(err.Error(), "replaced by a directory") {
					t.Fatalf("err = %v", err)
				}
				return
			}
			must(t, err)
			got := append(h.apply(evs), h.pollAll()...)
			wantTexts(t, got, "2")
			h.write("b.log", "y\n")
			wantTexts(t, h.pollAll(), "y")
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Java parity §2.4: a file deleted under the reader and created again
// under the same name is rediscovered and its new content collected.
func TestDeleteAndRecreate(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "before\n")
	h.open()
	wantTexts(t, h.pollAll(), "before")
	must(t, os.Remove(h.path("a.log")))
	h.pollAll()
	h.write("a.log", "after\n")
	got := h.pollAll()
	wantTexts(t, got, "after")
	if got[0].Line != 1 {
		t.Fatalf("line %d", got[0].Line)
	}
}

// TestHugePartialLineBoundedPoll: a line that never ends neither blocks a
// poll for long nor grows memory, and is delivered truncated once it ends.
func TestHugePartialLineBoundedPoll(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxLineBytes = 1024 })
	chunk := strings.Repeat("z", 1<<20)
	f, err := os.Create(h.path("a.log"))
	must(t, err)
	for i := 0; i < 40; i++ {
		_, err = f.WriteString(chunk)
		must(t, err)
	}
	must(t, f.Close())
	h.open()
	h.poll(10)
	if s := h.in.Stats(); s.BytesRead > maxPollBytes+readChunk {
		t.Fatalf("one poll read %d bytes", s.BytesRead)
	}
	h.pollAll()
	h.write("a.log", "\nnext\n")
	got := h.pollAll()
	if len(got) != 2 || len(got[0].text()) != 1024 || got[1].text() != "next" || got[0].Offset != 40<<20+1 {
		t.Fatalf("got %d events", len(got))
	}
}

// TestRewriteSameSize: truncated and rewritten to exactly the old size
// while at its end — size says nothing, the changed first bytes do.
func TestRewriteSameSize(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "aaaa\nbbbb\n")
	h.open()
	h.pollAll()
	must(t, os.WriteFile(h.path("a.log"), []byte("cccc\ndddd\n"), 0o644))
	wantTexts(t, h.pollAll(), "cccc", "dddd")
}
