package file

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// logLine is one captured record: its level, message and attributes
// (values formatted as the text handler would).
type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// logRecorder is an slog.Handler keeping every record, for tests that
// assert on what an operator would read.
type logRecorder struct {
	mu    sync.Mutex
	lines []logLine
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	l := logLine{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, l)
	r.mu.Unlock()
	return nil
}

// take returns the lifecycle lines (those naming an inode) logged since
// the last take, at INFO and above.
func (r *logRecorder) take() []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logLine
	for _, l := range r.lines {
		if l.level >= slog.LevelInfo && l.attrs["inode"] != "" {
			out = append(out, l)
		}
	}
	r.lines = nil
	return out
}

func recordLogs(h *harness) *logRecorder {
	r := &logRecorder{}
	h.log = slog.New(r)
	return r
}

// wantLog describes an expected lifecycle line: a message prefix and the
// attributes that must have these values.
type wantLog struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func idAttrs(id fileID, path string, offset int64) map[string]string {
	return map[string]string{
		"path": path, "dev": fmt.Sprint(id.dev), "inode": fmt.Sprint(id.ino), "offset": fmt.Sprint(offset),
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	m = maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func checkLogs(t *testing.T, got []logLine, want ...wantLog) {
	t.Helper()
	dump := func() string {
		var b strings.Builder
		for _, l := range got {
			fmt.Fprintf(&b, "\n  %s %q %v", l.level, l.msg, l.attrs)
		}
		return b.String()
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lifecycle lines, want %d:%s", len(got), len(want), dump())
	}
	for i, w := range want {
		g := got[i]
		if g.level != w.level || !strings.HasPrefix(g.msg, w.msg) {
			t.Fatalf("line %d: got %s %q, want %s %q...:%s", i, g.level, g.msg, w.level, w.msg, dump())
		}
		for k, v := range w.attrs {
			if g.attrs[k] != v {
				t.Fatalf("line %d (%q): %s=%q, want %q:%s", i, g.msg, k, g.attrs[k], v, dump())
			}
		}
	}
}

// A rename rotation is logged as the operator sees it: the old file
// renamed out of the globs (read on), the path now naming a new file,
// then the old one forgotten once quiet. One line per event, none per
// line read.
func TestLifecycleLogRenameRotation(t *testing.T) {
	h := newHarness(t, nil)
	logs := recordLogs(h)
	h.write("app.log", "1\n2\n")
	oldID := mustStat(t, h.path("app.log"))
	h.open()
	wantTexts(t, h.pollAll(), "1", "2")
	checkLogs(t, logs.take(), wantLog{slog.LevelInfo, "file opened", idAttrs(oldID, h.path("app.log"), 0)})

	must(t, os.Rename(h.path("app.log"), h.path("app.old")))
	h.write("app.log", "new1\n")
	newID := mustStat(t, h.path("app.log"))
	wantTexts(t, h.pollAll(), "new1")
	checkLogs(t, logs.take(),
		wantLog{slog.LevelInfo, "file rotated", with(idAttrs(newID, h.path("app.log"), 0),
			"previous_inode", fmt.Sprint(oldID.ino))},
		wantLog{slog.LevelInfo, "file renamed out of the globs", idAttrs(oldID, h.path("app.log"), 4)},
	)

	h.clock = h.clock.Add(h.cfg.CloseInactive)
	h.pollAll()
	got := logs.take()
	// The new file went quiet too; the order of the two is the read order.
	slices.SortFunc(got, func(a, b logLine) int { return strings.Compare(a.msg, b.msg) })
	checkLogs(t, got,
		wantLog{slog.LevelInfo, "file closed after close-inactive", with(idAttrs(newID, h.path("app.log"), 5),
			"close_inactive", h.cfg.CloseInactive.String())},
		wantLog{slog.LevelInfo, "file forgotten: renamed out of the globs", idAttrs(oldID, h.path("app.log"), 4)},
	)
}

// Copytruncate: the truncation names the offset the file had and that
// reading restarts at 0.
func TestLifecycleLogTruncation(t *testing.T) {
	h := newHarness(t, nil)
	logs := recordLogs(h)
	h.write("app.log", "old line one\nold line two\n")
	id := mustStat(t, h.path("app.log"))
	h.open()
	h.pollAll()
	logs.take()
	must(t, os.Truncate(h.path("app.log"), 0))
	h.write("app.log", "fresh\n")
	wantTexts(t, h.pollAll(), "fresh")
	checkLogs(t, logs.take(), wantLog{slog.LevelInfo, "file truncated", with(idAttrs(id, h.path("app.log"), 0),
		"previous_offset", "26")})
}

// Close-inactive closes and a later write reopens at the same offset.
func TestLifecycleLogCloseInactiveAndReopen(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CloseInactive = 50 * time.Millisecond })
	logs := recordLogs(h)
	h.write("a.log", "first\n")
	id := mustStat(t, h.path("a.log"))
	h.open()
	h.pollAll()
	for range 10 {
		h.poll(10)
	}
	checkLogs(t, logs.take(),
		wantLog{slog.LevelInfo, "file opened", idAttrs(id, h.path("a.log"), 0)},
		wantLog{slog.LevelInfo, "file closed after close-inactive", idAttrs(id, h.path("a.log"), 6)},
	)
	h.write("a.log", "second\n")
	wantTexts(t, h.pollAll(), "second")
	got := logs.take()
	if len(got) == 0 {
		t.Fatal("reopen not logged")
	}
	checkLogs(t, got[:1], wantLog{slog.LevelInfo, "file reopened", idAttrs(id, h.path("a.log"), 6)})
}

// A deleted open file: noticed, read to its end, forgotten.
func TestLifecycleLogDelete(t *testing.T) {
	h := newHarness(t, nil)
	logs := recordLogs(h)
	h.write("a.log", "1\n")
	id := mustStat(t, h.path("a.log"))
	h.open()
	h.pollAll()
	logs.take()
	h.write("a.log", "2\n")
	must(t, os.Remove(h.path("a.log")))
	wantTexts(t, h.pollAll(), "2")
	checkLogs(t, logs.take(),
		wantLog{slog.LevelInfo, "file deleted; reading it to its end", idAttrs(id, h.path("a.log"), 2)},
		wantLog{slog.LevelInfo, "file forgotten: deleted", idAttrs(id, h.path("a.log"), 4)},
	)
}

// A file deleted while closed with bytes written after its last read:
// those bytes are lost, and a WARN says how many.
func TestLifecycleLogLostBytesWhileClosed(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CloseInactive = 50 * time.Millisecond })
	logs := recordLogs(h)
	h.write("a.log", "first\n")
	id := mustStat(t, h.path("a.log"))
	h.open()
	h.pollAll()
	for range 10 {
		h.poll(10)
	}
	logs.take()
	// Written while closed, seen by a scan (size), then deleted before a
	// read: the input cannot open it any more.
	h.write("a.log", "unread\n")
	h.in.openFile = func(string) (*os.File, error) { return nil, os.ErrNotExist }
	h.poll(10)
	must(t, os.Remove(h.path("a.log")))
	h.pollAll()
	checkLogs(t, logs.take(),
		wantLog{slog.LevelWarn, "file deleted or rotated away while closed", with(idAttrs(id, h.path("a.log"), 6),
			"lost_bytes", "7")},
		wantLog{slog.LevelInfo, "file forgotten: deleted or renamed out of the globs while closed", idAttrs(id, h.path("a.log"), 6)},
	)
	want := []input.Loss{{Reason: input.LossGone, Path: h.path("a.log"), From: 6, To: 13}}
	if !slices.Equal(h.losses, want) {
		t.Errorf("losses reported %+v, want %+v", h.losses, want)
	}
}
