package file

import (
	"fmt"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"

	"github.com/edge-agent/edge-agent/connector/input"
)

// drainPending moves queued events into the poll's output, oldest first,
// within the budget.
func (em *emitter) drainPending() {
	em.settle()
	n := len(em.pending)
	if n > em.budget {
		n = em.budget
	}
	em.out = append(em.out, em.pending[:n]...)
	em.budget -= n
	rest := copy(em.pending, em.pending[n:])
	clear(em.pending[rest:])
	em.pending = em.pending[:rest]
}

// emit adds an event to the poll's output, or queues it for the next
// poll when the budget is used up (only forced events: position changes
// and group flushes that cannot wait).
func (em *emitter) emit(ev input.Event) {
	em.settle()
	em.put(ev)
}

// put adds an event to the poll's output or queues it, and reports where.
func (em *emitter) put(ev input.Event) (pending bool, idx int) {
	if ev.Payload != nil {
		em.local.events++
	}
	if em.budget > 0 && len(em.pending) == 0 {
		em.out = append(em.out, ev)
		em.budget--
		return false, len(em.out) - 1
	}
	em.pending = append(em.pending, ev)
	return true, len(em.pending) - 1
}

// owedPos is the position a line event left without one (emitLine): the
// values it had when the line was read, and where that event went.
type owedPos struct {
	ok      bool
	pending bool // the event is in in.em.pending, else in in.em.out
	idx     int
	key     string
	head    []byte // the file's state head (emitter.state) at the line
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
func (em *emitter) emitLine(t *tracked, payload []byte) {
	head := em.state(t)
	if head == nil {
		em.emit(input.Event{Payload: payload, Pos: em.position(t)})
		return
	}
	if em.owed.ok && em.owed.key != t.key {
		em.settle()
	}
	pending, idx := em.put(input.Event{Payload: payload})
	em.owed = owedPos{ok: true, pending: pending, idx: idx, key: t.key, head: head,
		offset: t.offset, line: t.line, size: max(t.lastSize, t.readPos)}
}

// settle writes the owed position, if any, into its event.
func (em *emitter) settle() {
	o := &em.owed
	if !o.ok {
		return
	}
	buf := em.arena.begin(len(o.head) + 48)
	start := len(buf)
	buf = append(buf, o.head...)
	buf = appendStateTail(buf, o.offset, o.line, o.size)
	pos := input.Position{Key: o.key, State: em.arena.end(buf, start)}
	if o.pending {
		em.pending[o.idx].Pos = pos
	} else {
		em.out[o.idx].Pos = pos
	}
	*o = owedPos{}
}

// position returns the current position of t.
func (em *emitter) position(t *tracked) input.Position {
	var buf []byte
	var start int
	if head := em.state(t); head != nil {
		buf = em.arena.begin(len(head) + 48)
		start = len(buf)
		buf = append(buf, head...)
	} else {
		buf = em.arena.begin(len(t.fileJSON) + stateHeadFixed + 48)
		start = len(buf)
		buf = appendStateHead(buf, t.id, t.fileJSON, t.fp.Sum(), contentOf(em.files.PriorOf(t)))
	}
	off, line, size := t.offset, t.line, max(t.lastSize, t.readPos)
	if t.behind {
		// Saved at its end: after a restart a file holding less than its
		// offset would be taken for truncated and read from 0.
		off, line, size = t.lastSize, 0, t.lastSize
	}
	buf = appendStateTail(buf, off, line, size)
	return input.Position{Key: t.key, State: em.arena.end(buf, start)}
}

// emitPosition emits a position-only event for t.
func (em *emitter) emitPosition(t *tracked) {
	em.emit(input.Event{Pos: em.position(t)})
}

// emitForget tells the scheduler to drop the position of key.
func (em *emitter) emitForget(key string) {
	em.emit(input.Event{Pos: input.Position{Key: key}})
}

// emitLoss reports bytes [from, to) of the file at path as never to be
// read (input.Loss), and forgets the position of key with them.
func (em *emitter) emitLoss(key, path, reason string, from, to int64) {
	em.local.lostBytes += to - from
	em.emit(input.Event{Pos: input.Position{Key: key}, Loss: &input.Loss{Reason: reason, Path: path, From: from, To: to}})
}

// publish copies the poll-local counters to the atomics Stats reads.
func (in *Input) publish() {
	l := &in.rep.local
	s := &in.rep.stats
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
	s.filesTracked.Store(int64(in.files.Len()))
	in.publishFiles()
}

// fileErr applies on-error to a problem with one file: with fail it
// returns the error (the scheduler stops), with skip it logs once per
// path and message and returns nil.
func (rp *report) fileErr(op, path string, err error) error {
	rp.local.errors++
	wrapped := fmt.Errorf("%s %s: %w", op, path, err)
	if rp.failFast {
		return wrapped
	}
	msg := wrapped.Error()
	if rp.errSeen[path] != msg {
		rp.errSeen[path] = msg
		rp.log.Warn("skipping file after error (on-error: skip)", "path", path, "error", err)
	}
	return nil
}

// fileOK clears the once-per-error log memory of a path.
func (rp *report) fileOK(path string) {
	if len(rp.errSeen) > 0 {
		delete(rp.errSeen, path)
	}
}

// dropFiltered accounts for an event the line filters dropped: counted,
// and its position still saved so its bytes are not read again.
func (em *emitter) dropFiltered(t *tracked) {
	em.local.filtered++
	em.emitPosition(t)
}

// emitGroup emits a completed multiline group, or drops it when the line
// filters reject its first line.
func (em *emitter) emitGroup(t *tracked, g []multiline.Line) {
	last := g[len(g)-1]
	t.offset, t.line = last.End, last.Num
	if em.rules.filter != nil && !em.rules.filter.Keep(g[0].Text) {
		em.dropFiltered(t)
		return
	}
	s := em.rules.fmt.appendGroup(em.scratch[:0], t.fileJSON, g, t.bigEndian, em.rules.extra)
	em.scratch = s
	em.emit(input.Event{Payload: em.arena.copy(s), Pos: em.position(t)})
}

// emitReady emits t's completed multiline groups while the budget lasts
// (all of them when force is set) and returns how many it emitted.
func (em *emitter) emitReady(t *tracked, force bool) int {
	if t.asm == nil {
		return 0
	}
	n := 0
	for g := t.asm.Ready(); g != nil; g = t.asm.Ready() {
		if !force && em.budget == 0 {
			break
		}
		em.emitGroup(t, g)
		t.asm.Done()
		n++
	}
	return n
}

// flushGroups releases t's buffered lines as a group and emits everything
// ready.
func (em *emitter) flushGroups(t *tracked, force bool) {
	if t.asm == nil {
		return
	}
	t.asm.Flush()
	em.emitReady(t, force)
}
