package agent

import (
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// eventBuffer holds the events read and not yet written to the queue, each
// with the id of the input it came from.
type eventBuffer struct {
	events []input.Event
	ids    []string // ids[i] is the input events[i] came from
	since  time.Time
	bytes  int // payload bytes of events
	// unpositioned counts the events without an input position: nothing
	// reads them again after a crash (commitWait).
	unpositioned int
}

func (b *eventBuffer) len() int { return len(b.events) }

// tag records that events[before:] came from input id, and returns how
// many of them carry a payload.
func (b *eventBuffer) tag(id string, before int, now time.Time) int {
	if len(b.events) == before {
		return 0
	}
	if before == 0 {
		b.since = now
	}
	n := 0
	for i := before; i < len(b.events); i++ {
		b.ids = append(b.ids, id)
		if b.events[i].Pos.Key == "" {
			b.unpositioned++
		}
		if p := b.events[i].Payload; p != nil {
			n++
			b.bytes += len(p)
		}
	}
	return n
}

// drop removes the first n events, of nbytes payload bytes, once they are
// in the queue; what is left waits from now on.
func (b *eventBuffer) drop(n, nbytes int, now time.Time) {
	for i := range b.events[:n] {
		if b.events[i].Pos.Key == "" {
			b.unpositioned--
		}
	}
	clear(b.events[:n])
	b.events = b.events[:copy(b.events, b.events[n:])]
	b.ids = b.ids[:copy(b.ids, b.ids[n:])]
	b.bytes -= nbytes
	if len(b.events) > 0 {
		b.since = now
	}
}

// maxGroupBytes of payloads end a group whatever its count: a group of big
// events (stack traces, long JSON) must not hold more in memory and in one
// transaction, and beyond it the agent's memory bound is at risk.
const maxGroupBytes = 2 << 20

// groupJobs is how many jobs' rows a group may hold: beyond that a bigger
// group gains little over the fsync it amortises, and costs memory.
// maxJobs follows it (startup.go).
const groupJobs = 4

// nosyncMaxGroup caps the group when the WAL does not fsync: there is no
// fsync to spread, and bigger groups made bbolt dirty new pages rather
// than reuse them.
const nosyncMaxGroup = 512

// grouping sizes the commit group: how many events the buffer takes before
// it is written. Every commit has a fixed cost (the fsync, the pages around
// the rows), so under load the group doubles while every poll finds the
// input still full, up to ceiling, and halves back toward
// agent.bulk-max-size once the input runs dry: a quiet input still waits
// no longer than flush-interval-ms. Jobs do not grow with it: jobs that
// come back unsent are released in one transaction that rewrites their
// rows, and on a full disk that has only the WAL's reserve.
type grouping struct {
	size    int // events the buffer takes before it is written
	floor   int // agent.bulk-max-size
	ceiling int // the most size grows to; a floor above it still rules
	// inputFull: the last poll stopped at a full group, not because the
	// inputs had nothing more.
	inputFull bool
}

// newGrouping is the grouping of o's settings for jobs of jobSize rows,
// starting at agent.bulk-max-size. wal says the queue is the WAL.
func newGrouping(o Options, jobSize int, wal bool) grouping {
	g := grouping{floor: max(1, o.Agent.BulkMaxSize), ceiling: groupJobs * jobSize}
	if wal && !o.WAL.Fsync {
		g.ceiling = min(nosyncMaxGroup, maxJobs*jobSize)
	}
	g.reset()
	return g
}

// reset starts the group again at agent.bulk-max-size (start, reload, a
// failed transaction: the buffer then holds no more than the setting says).
func (g *grouping) reset() { g.size = g.floor }

// grow adapts the group after a commit that wrote the buffer: double while
// the input kept the buffer full, halve back once it ran dry.
func (g *grouping) grow() {
	if g.inputFull {
		g.size = max(g.floor, min(g.size*2, g.ceiling))
		return
	}
	g.size = max(g.floor, g.size/2)
}

// full reports whether b holds a whole group: size events, or
// maxGroupBytes of payloads.
func (g *grouping) full(b *eventBuffer) bool {
	return b.len() >= g.size || b.bytes >= maxGroupBytes
}
