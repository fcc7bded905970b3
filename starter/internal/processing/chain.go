package processing

import (
	"container/heap"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// verdict is what a processor decided for one event.
type verdict uint8

const (
	pass verdict = iota
	dropped
	folded
	sampledOut
	held
)

// item is an event on its way through the chain: seq is its place in the
// input's order, which positions are released by.
type item struct {
	ev  event
	seq uint64
	// spare is an empty map of an event before, for the parser's object.
	spare map[string]any
	// store holds the tagged model's members, reused.
	store docStore
}

// processor is one step. apply may change it.ev; a held item is the
// processor's until it hands it back through release.
type processor interface {
	apply(it *item, now time.Time) verdict
	counts() *counts
}

// tagger is a processor with a case for the tagged model: when the first
// step has one, events are read into that model.
type tagger interface {
	runsTagged() bool
}

// holder is a processor that holds events (dedup).
type holder interface {
	processor
	// release hands over the items whose window closed by now, or every
	// item when all is set, in the order they were first held.
	release(now time.Time, all bool, emit func(*item))
}

// Settings are what a chain gets from the agent.
type Settings struct {
	// Logger reports events a chain could not process (rate-limited by
	// the caller's logger); nil discards.
	Logger *slog.Logger
}

// Chain runs one input's processors. Not safe for concurrent use, but
// Stats.
type Chain struct {
	steps []processor
	log   *slog.Logger

	next        uint64 // seq of the next event in
	holds       seqHeap
	heldCount   map[uint64]int
	stash       []stashed // positions after the oldest held event, in order
	undecodable atomic.Uint64
	// spare is the item of the last event no step kept.
	spare *item
	// tagged: events are read into the tagged model (the first step
	// runs on it).
	tagged bool
}

type stashed struct {
	seq uint64
	pos input.Position
}

// New builds a chain of steps; nil steps give a nil chain, which passes
// everything (the path without processors costs nothing).
func New(steps []Step, set Settings) (*Chain, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	return build(steps, set)
}

func build(steps []Step, set Settings) (*Chain, error) {
	var errs []error
	c := &Chain{log: set.Logger, heldCount: make(map[uint64]int)}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	for i := range steps {
		p, err := newProcessor(i, &steps[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.steps = append(c.steps, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(c.steps) == 0 {
		return c, nil
	}
	if t, ok := c.steps[0].(tagger); ok && t.runsTagged() {
		c.tagged = true
	}
	return c, nil
}

// newProcessor builds step i.
func newProcessor(i int, s *Step) (processor, error) {
	if err := shapeError(s); err != nil {
		return nil, stepError(i, "", err)
	}
	base := &counts{step: i, kind: s.Kind()}
	switch base.kind {
	case "parse":
		return newParser(i, s.Parse, base)
	case "drop", "keep":
		return newFilter(i, base.kind, s.Drop+s.Keep, base)
	case "set", "set-expr", "rename", "move", "copy", "remove", "keep-fields":
		return newFieldOp(i, s, base)
	case "truncate":
		return newTruncate(i, s.Truncate, base)
	case "redact":
		return newRedactor(i, s.Redact, base)
	case "dedup":
		return newDedup(i, s.Dedup, base)
	case "sample":
		return newSampler(i, s.Sample, base)
	case "timestamp":
		return newTimestamper(i, s.Timestamp, base)
	}
	return nil, stepError(i, "", fmt.Errorf("unknown processor %q", base.kind))
}

// Process runs the chain over events[from:] in place and returns the
// slice: an event dropped, folded, sampled out or held keeps its place as
// a position-only event (nil Payload); events whose dedup window closed by
// now, and positions held back behind them, are appended. A nil chain
// returns events unchanged.
func (c *Chain) Process(events []input.Event, from int, now time.Time) []input.Event {
	if c == nil {
		return events
	}
	for i := from; i < len(events); i++ {
		seq := c.next
		c.next++
		ev := &events[i]
		if ev.Payload != nil {
			c.processOne(ev, seq, now)
		}
		c.holdBack(ev, seq)
	}
	return c.releaseDue(events, now, false)
}

// Flush emits every held event and the positions behind them (shutdown,
// or before a reload replaces the chain), appended to events.
func (c *Chain) Flush(events []input.Event, now time.Time) []input.Event {
	if c == nil {
		return events
	}
	return c.releaseDue(events, now, true)
}

// Holding reports whether events are held (the caller polls again soon
// so their windows close on time).
func (c *Chain) Holding() bool { return c != nil && len(c.heldCount) > 0 }

// processOne runs one event with a payload through every step.
func (c *Chain) processOne(ev *input.Event, seq uint64, now time.Time) {
	it := c.spare
	if it == nil {
		it = &item{ev: event{fields: make(map[string]any, 8)}}
	}
	c.spare = nil
	it.seq, it.ev.dirty = seq, false
	var err error
	if c.tagged {
		it.ev.top, err = readDocObject(string(ev.Payload), &it.store)
		it.ev.tagged = err == nil
	} else {
		err = readObjectInto(ev.Payload, it.ev.fields)
	}
	if err != nil {
		c.undecodable.Add(1)
		c.recycle(it)
		return
	}
	v := c.run(it, 0, now)
	if v != held {
		// A held item is the holder's: the next event gets one of its own.
		defer c.recycle(it)
	}
	if v != pass {
		ev.Payload = nil
		return
	}
	if it.ev.dirty {
		// Room for what processors add, so the buffer is rarely grown.
		b, err := it.ev.encode(len(ev.Payload) + len(ev.Payload)/4 + 64)
		if err != nil {
			// Every value came from JSON or from a processor's string: a
			// failure here is a bug; keep the input's bytes.
			c.log.Error("processors: re-encode an event", slog.String("error", err.Error()))
			return
		}
		ev.Payload = b
	}
}

// recycle keeps it, no longer referenced by any step, for the next
// event: its map's storage is reused, its values let go.
func (c *Chain) recycle(it *item) {
	it.store.reset()
	it.ev.top, it.ev.tagged = node{}, false
	if len(it.ev.fields) > maxSpareFields {
		// A map keeps the room it grew to, and clearing costs that room.
		return
	}
	if m, ok := it.ev.fields[defaultField].(map[string]any); ok && it.spare == nil && len(m) <= maxSpareFields {
		n := len(it.ev.fields)
		clear(m)
		if len(it.ev.fields) == n {
			// m is not the event's own map (an expression can store that).
			it.spare = m
		}
	}
	clear(it.ev.fields)
	c.spare = it
}

// maxSpareFields bounds the top-level fields of an event whose map is
// reused.
const maxSpareFields = 64

// run applies steps from..end to it.
func (c *Chain) run(it *item, from int, now time.Time) verdict {
	for _, p := range c.steps[from:] {
		n := p.counts()
		n.in.Add(1)
		switch v := p.apply(it, now); v {
		case pass:
			n.out.Add(1)
		case dropped:
			n.dropped.Add(1)
			return v
		case folded:
			n.folded.Add(1)
			return v
		case sampledOut:
			n.sampledOut.Add(1)
			return v
		case held:
			n.held.Add(1)
			c.hold(it.seq)
			// The item's room is not kept for as long as the window: what
			// the held event references stays reachable through it alone.
			it.store = docStore{}
			return v
		}
	}
	return pass
}

// holdBack stashes ev's position while an event older than it is held:
// committing it would let a restart skip the held one.
func (c *Chain) holdBack(ev *input.Event, seq uint64) {
	if ev.Pos.Key == "" || len(c.heldCount) == 0 {
		return
	}
	if seq >= c.holds.min(c.heldCount) {
		c.stash = append(c.stash, stashed{seq: seq, pos: ev.Pos})
		ev.Pos = input.Position{}
	}
}

func (c *Chain) hold(seq uint64) {
	if c.heldCount[seq] == 0 {
		heap.Push(&c.holds, seq)
	}
	c.heldCount[seq]++
}

func (c *Chain) unhold(seq uint64) {
	if c.heldCount[seq]--; c.heldCount[seq] <= 0 {
		delete(c.heldCount, seq)
	}
}

// releaseDue emits the held events whose windows closed (all of them
// when all), each through the steps after its holder, then the stashed
// positions no held event precedes any more.
func (c *Chain) releaseDue(events []input.Event, now time.Time, all bool) []input.Event {
	for i, p := range c.steps {
		h, ok := p.(holder)
		if !ok {
			continue
		}
		h.release(now, all, func(it *item) {
			h.counts().held.Add(^uint64(0))
			h.counts().out.Add(1)
			c.unhold(it.seq)
			if c.run(it, i+1, now) != pass {
				return
			}
			b, err := it.ev.encode(512)
			if err != nil {
				c.log.Error("processors: encode a released event", slog.String("error", err.Error()))
				return
			}
			events = append(events, input.Event{Payload: b})
		})
	}
	if len(c.stash) == 0 {
		return events
	}
	limit := ^uint64(0)
	if len(c.heldCount) > 0 {
		limit = c.holds.min(c.heldCount)
	}
	n := 0
	for n < len(c.stash) && c.stash[n].seq < limit {
		n++
	}
	// Only the last position of each key counts (the scheduler keeps the
	// last per key of a transaction).
	for i, st := range c.stash[:n] {
		last := true
		for _, later := range c.stash[i+1 : n] {
			if later.pos.Key == st.pos.Key {
				last = false
				break
			}
		}
		if last {
			events = append(events, input.Event{Pos: st.pos})
		}
	}
	clear(c.stash[:n])
	c.stash = c.stash[:copy(c.stash, c.stash[n:])]
	return events
}

// Stats reads the counters; safe from any goroutine. A nil chain has none.
func (c *Chain) Stats() ChainStats {
	if c == nil {
		return ChainStats{}
	}
	s := ChainStats{Undecodable: c.undecodable.Load(), Steps: make([]ProcessorStats, len(c.steps))}
	for i, p := range c.steps {
		s.Steps[i] = p.counts().snapshot()
	}
	return s
}

// seqHeap is a min-heap of held seqs; entries no longer held are popped
// lazily by min.
type seqHeap []uint64

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h seqHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *seqHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *seqHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// min is the oldest seq still held; held must not be empty.
func (h *seqHeap) min(held map[uint64]int) uint64 {
	for h.Len() > 0 {
		if s := (*h)[0]; held[s] > 0 {
			return s
		}
		heap.Pop(h)
	}
	return ^uint64(0)
}

// Holds reports whether the chain has a step that holds events (dedup).
func (c *Chain) Holds() bool {
	if c == nil {
		return false
	}
	for _, p := range c.steps {
		if _, ok := p.(holder); ok {
			return true
		}
	}
	return false
}
