package logging

import (
	"bytes"
	"sync"
)

// DefaultRingLines is how many recent records a Ring keeps when asked for
// zero: enough to see what led up to a problem in a diagnostics bundle,
// bounded so that a chatty agent holds at most a few hundred KiB.
const DefaultRingLines = 500

// maxRingLine bounds one kept record; a longer one is cut (and says so).
const maxRingLine = 4 << 10

// Ring keeps the last records the agent logged, one JSON line each, in
// memory: the diagnostics bundle's log lines, there even when the log
// file is unreadable or off. It is an io.Writer for a slog handler that
// writes one record per Write, as slog's own handlers do. Safe for
// concurrent use.
type Ring struct {
	mu    sync.Mutex
	lines [][]byte
	next  int
	full  bool
}

// NewRing keeps the last n records (DefaultRingLines when n <= 0).
func NewRing(n int) *Ring {
	if n <= 0 {
		n = DefaultRingLines
	}
	return &Ring{lines: make([][]byte, n)}
}

// Write keeps p as one record, trailing newline dropped.
func (r *Ring) Write(p []byte) (int, error) {
	line := bytes.TrimRight(p, "\n")
	if len(line) > maxRingLine {
		line = append(append([]byte{}, line[:maxRingLine]...), []byte("…(cut)")...)
	} else {
		line = append([]byte(nil), line...)
	}
	r.mu.Lock()
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	if r.next == 0 {
		r.full = true
	}
	r.mu.Unlock()
	return len(p), nil
}

// Lines returns the kept records, oldest first.
func (r *Ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	if r.full {
		for _, l := range r.lines[r.next:] {
			out = append(out, string(l))
		}
	}
	for _, l := range r.lines[:r.next] {
		out = append(out, string(l))
	}
	return out
}
