package file

import (
	"fmt"
	"github.com/edge-agent/edge-agent/connector/file/internal/multiline"

	"github.com/edge-agent/edge-agent/connector/input"
)

// drainPending moves queued events into the poll's output, oldest first,
// within the budget.
func (in *Input) drainPending() {
	in.settle()
	n := len(in.pending)
	if n > in.budget {
		n = in.budget
	}
	in.out = append(in.out, in.pending[:n]...)
	in.budget -= n
	rest := copy(in.pending, in.pending[n:])
	clear(in.pending[rest:])
	in.pending = in.pending[:rest]
}

// emit adds an event to the poll's output, or queues it for the next
// poll when the budget is used up (only forced events: position changes
// and group flushes that cannot wait).
func (in *Input) emit(ev input.Event) {
	in.settle()
	in.put(ev)
}

// put adds an event to the poll's output or queues it, and reports where.
func (in *Input) put(ev input.Event) (pending bool, idx int) {
	if ev.Payload != nil {
		in.local.events++
	}
	if in.budget > 0 && len(in.pending) == 0 {
		in.out = append(in.out, ev)
		in.budget--
		return false, len(in.out) - 1
	}
	in.pending = append(in.pending, ev)
	return true, len(in.pending) - 1
}

// owedPos is the position a line event left without one (emitLine): the
// values it had when the line was read, and where that event went.
type owedPos struct {
	ok      bool
	pending bool // the event is in in.pending, else in in.out
	idx     int
	key     string
	head    []byte // the file's state head (tracked.state) at the line
	offset  int64
	line    int64
	size    int64
}

// emitLine emits a single-line event whose position is that of t now.
// Building a position per line (the state head copied, three integers
// formatted) cost about a fifth of reading a line, and the scheduler
// keeps only the last per key of what it writes together: so the
// position is owed, and written only into the last line event of a run
// from one file (settle), before any other event is emitted and before
// Poll or Drain returns. The events before it carry no position.
func (in *Input) emitLine(t *tracked, payload []byte) {
	head := t.state()
	if head == nil {
		in.emit(input.Event{Payload: payload, Pos: in.position(t)})
		return
	}
	if in.owed.ok && in.owed.key != t.key {
		in.settle()
	}
	pending, idx := in.put(input.Event{Payload: payload})
	in.owed = owedPos{ok: true, pending: pending, idx: idx, key: t.key, head: head,
		offset: t.offset, line: t.line, size: max(t.lastSize, t.readPos)}
}

// settle writes the owed position, if any, into its event.
func (in *Input) settle() {
	o := &in.owed
	if !o.ok {
		return
	}
	buf := in.arena.begin(len(o.head) + 48)
	start := len(buf)
	buf = append(buf, o.head...)
	buf = appendStateTail(buf, o.offset, o.line, o.size)
	pos := input.Position{Key: o.key, State: in.arena.end(buf, start)}
	if o.pending {
		in.pending[o.idx].Pos = pos
	} else {
		in.out[o.idx].Pos = pos
	}
	*o = owedPos{}
}

// position returns the current position of t.
func (in *Input) position(t *tracked) input.Position {
	var buf []byte
	var start int
	if head := t.state(); head != nil {
		buf = in.arena.begin(len(head) + 48)
		start = len(buf)
		buf = append(buf, head...)
	} else {
		buf = in.arena.begin(len(t.fileJSON) + stateHeadFixed + 48)
		start = len(buf)
		buf = appendStateHead(buf, t.id, t.fileJSON, t.fp.Sum(), t.prior)
	}
	off, line, size := t.offset, t.line, max(t.lastSize, t.readPos)
	if t.behind {
		// Saved at its end: after a restart a file holding less than its
		// offset would be taken for truncated and read from 0.
		off, line, size = t.lastSize, 0, t.lastSize
	}
	buf = appendStateTail(buf, off, line, size)
	return input.Position{Key: t.key, State: in.arena.end(buf, start)}
}

// emitPosition emits a position-only event for t.
func (in *Input) emitPosition(t *tracked) {
	in.emit(input.Event{Pos: in.position(t)})
}

// emitForget tells the scheduler to drop the position of key.
func (in *Input) emitForget(key string) {
	in.emit(input.Event{Pos: input.Position{Key: key}})
}

// publish copies the poll-local counters to the atomics Stats reads.
func (in *Input) publish() {
	l := &in.local
	s := &in.stats
	s.linesRead.Add(l.lines)
	s.bytesRead.Add(l.bytes)
	s.events.Add(l.events)
	s.truncatedLines.Add(l.truncated)
	s.invalid.Add(in.fmt.invalid)
	s.rotations.Add(l.rotations)
	s.truncations.Add(l.truncations)
	s.errors.Add(l.errors)
	s.filtered.Add(l.filtered)
	s.lostBytes.Add(l.lostBytes)
	*l = localCounts{}
	in.fmt.invalid = 0
	s.filesOpen.Store(int64(len(in.openFiles)))
	s.filesTracked.Store(int64(len(in.files)))
	in.publishFiles()
}

// fileErr applies on-error to a problem with one file: with fail it
// returns the error (the scheduler stops), with skip it logs once per
// path and message and returns nil.
func (in *Input) fileErr(op, path string, err error) error {
	in.local.errors++
	wrapped := fmt.Errorf("%s %s: %w", op, path, err)
	if in.failFast {
		return wrapped
	}
	msg := wrapped.Error()
	if in.errSeen[path] != msg {
		in.errSeen[path] = msg
		in.log.Warn("skipping file after error (on-error: skip)", "path", path, "error", err)
	}
	return nil
}

// fileOK clears the once-per-error log memory of a path.
func (in *Input) fileOK(path string) {
	if len(in.errSeen) > 0 {
		delete(in.errSeen, path)
	}
}

// dropFiltered accounts for an event the line filters dropped: counted,
// and its position still saved so its bytes are not read again.
func (in *Input) dropFiltered(t *tracked) {
	in.local.filtered++
	in.emitPosition(t)
}

// emitGroup emits a completed multiline group, or drops it when the line
// filters reject its first line.
func (in *Input) emitGroup(t *tracked, g []multiline.Line) {
	last := g[len(g)-1]
	t.offset, t.line = last.End, last.Num
	if in.filter != nil && !in.filter.keep(g[0].Text) {
		in.dropFiltered(t)
		return
	}
	s := in.fmt.appendGroup(in.scratch[:0], t.fileJSON, g, t.bigEndian, in.extra)
	in.scratch = s
	in.emit(input.Event{Payload: in.arena.copy(s), Pos: in.position(t)})
}
