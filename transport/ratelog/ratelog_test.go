package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestWarnerHoldsBackAndCounts(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	now := time.Unix(1000, 0)
	w := &Warner{Every: time.Second, Now: func() time.Time { return now }}
	steps := []struct {
		advance time.Duration
		lines   int
		tail    string // the last line's end, "" for no new line
	}{
		{0, 1, "msg=flood"},
		{100 * time.Millisecond, 1, ""},
		{100 * time.Millisecond, 1, ""},
		{800 * time.Millisecond, 2, "suppressed_since_last=2"},
		{999 * time.Millisecond, 2, ""},
		{time.Millisecond, 3, "suppressed_since_last=1"},
		{5 * time.Second, 4, "msg=flood"},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		w.Warn(l, "flood")
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != s.lines {
			t.Fatalf("step %d: %d lines, want %d:\n%s", i, len(lines), s.lines, buf.String())
		}
		if s.tail != "" && !strings.HasSuffix(lines[len(lines)-1], s.tail) {
			t.Fatalf("step %d: last line %q, want it to end in %q", i, lines[len(lines)-1], s.tail)
		}
	}
}

func TestWarnerZeroValueUsesDefault(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	now := time.Unix(0, 0)
	w := &Warner{Now: func() time.Time { return now }}
	w.Warn(l, "a")
	now = now.Add(DefaultEvery - time.Nanosecond)
	w.Warn(l, "a")
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("%d lines within DefaultEvery, want 1", n)
	}
	now = now.Add(time.Nanosecond)
	w.Warn(l, "a")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines after DefaultEvery, want 2", n)
	}
}

func TestTakeHeld(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	now := time.Unix(1000, 0)
	w := &Warner{Every: time.Second, Now: func() time.Time { return now }}
	if n := w.TakeHeld(true); n != 0 {
		t.Fatalf("fresh Warner held %d, want 0", n)
	}
	w.Warn(l, "flood")
	w.Warn(l, "flood")
	w.Warn(l, "flood")
	if n := w.TakeHeld(false); n != 0 {
		t.Fatalf("TakeHeld within Every took %d, want 0", n)
	}
	now = now.Add(time.Second)
	if n := w.TakeHeld(false); n != 2 {
		t.Fatalf("TakeHeld after Every took %d, want 2", n)
	}
	if n := w.TakeHeld(true); n != 0 {
		t.Fatalf("second TakeHeld took %d, want 0", n)
	}
	w.Warn(l, "flood")
	if n := strings.Count(buf.String(), "suppressed_since_last"); n != 0 {
		t.Fatalf("count taken by TakeHeld written again:\n%s", buf.String())
	}
	w.Warn(l, "flood")
	if n := w.TakeHeld(true); n != 1 {
		t.Fatalf("TakeHeld(all) within Every took %d, want 1", n)
	}
}
