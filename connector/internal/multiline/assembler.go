package multiline

import "regexp"

// Line is one physical line handed to the assembler.
type Line struct {
	Text []byte // decoded UTF-8 text; copied by Add
	Num  int64  // 1-based line number in the file
	End  int64  // file offset just past the line's newline
	TS   int64  // unix ms when the line was read
}

// Mode selects which side of the boundary a matching line belongs to.
type Mode uint8

const (
	// After: a matching line starts a new event.
	After Mode = iota
	// Before: a matching line ends the current event.
	Before
)

// Config describes how lines are grouped.
type Config struct {
	Pattern  *regexp.Regexp
	Mode     Mode
	Negate   bool
	MaxLines int
}

// Assembler groups the lines of one file. Not safe for concurrent use.
type Assembler struct {
	cfg Config

	text    []byte // text of the buffered and ready lines, back to back
	pending []Line // lines of the event being built (Text points into text)
	ready   [][]Line
	lastAt  int64 // TS of the last line added
	spare   [][]Line
}

// New returns an assembler. MaxLines ≤ 0 means 500, the documented default.
func New(cfg Config) *Assembler {
	if cfg.MaxLines <= 0 {
		cfg.MaxLines = 500
	}
	return &Assembler{cfg: cfg}
}

// Add feeds one line. Groups it completes become available from Ready.
func (a *Assembler) Add(l Line) {
	match := a.cfg.Pattern.Match(l.Text) != a.cfg.Negate
	if len(a.pending) >= a.cfg.MaxLines {
		a.release()
	}
	if a.cfg.Mode == After && match && len(a.pending) > 0 {
		a.release()
	}
	a.push(l)
	if a.cfg.Mode == Before && match {
		a.release()
	}
}

// Flush releases the buffered lines, if any, as one group.
func (a *Assembler) Flush() {
	if len(a.pending) > 0 {
		a.release()
	}
}

// Pending reports whether lines are buffered (not yet released).
func (a *Assembler) Pending() bool { return len(a.pending) > 0 }

// Buffered is the number of lines buffered, not yet released.
func (a *Assembler) Buffered() int { return len(a.pending) }

// LastAt is the read time (unix ms) of the last line added; the idle flush
// runs when it is older than the timeout. Zero when nothing is pending.
func (a *Assembler) LastAt() int64 {
	if len(a.pending) == 0 {
		return 0
	}
	return a.lastAt
}

// Ready returns the oldest released group, or nil. It stays valid until
// Done is called.
func (a *Assembler) Ready() []Line {
	if len(a.ready) == 0 {
		return nil
	}
	return a.ready[0]
}

// Done drops the group returned by Ready.
func (a *Assembler) Done() {
	if len(a.ready) == 0 {
		return
	}
	g := a.ready[0]
	copy(a.ready, a.ready[1:])
	a.ready[len(a.ready)-1] = nil
	a.ready = a.ready[:len(a.ready)-1]
	a.spare = append(a.spare, g[:0])
	if len(a.ready) == 0 {
		a.compact()
	}
}

// Reset drops everything (used only when a file's data is gone for good).
func (a *Assembler) Reset() {
	a.pending = a.pending[:0]
	a.ready = a.ready[:0]
	a.text = a.text[:0]
}

func (a *Assembler) push(l Line) {
	start := len(a.text)
	a.text = append(a.text, l.Text...)
	l.Text = a.text[start:len(a.text):len(a.text)]
	a.pending = append(a.pending, l)
	a.lastAt = l.TS
}

func (a *Assembler) release() {
	var g []Line
	if n := len(a.spare); n > 0 {
		g, a.spare = a.spare[n-1], a.spare[:n-1]
	}
	g = append(g, a.pending...)
	a.ready = append(a.ready, g)
	a.pending = a.pending[:0]
}

// compact moves the pending lines' text to the front of the text buffer
// once every ready group has been consumed, so the buffer does not grow.
// Moving forward in order never overwrites a later line's source bytes.
func (a *Assembler) compact() {
	n := 0
	for i := range a.pending {
		t := a.pending[i].Text
		copy(a.text[n:n+len(t)], t)
		a.pending[i].Text = a.text[n : n+len(t) : n+len(t)]
		n += len(t)
	}
	a.text = a.text[:n]
	if n == 0 && cap(a.text) > 1<<20 {
		a.text = nil
	}
}
