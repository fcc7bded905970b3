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

// groupJobs is how many jobs' rows a group may hold while the disk's
// fsync is cheap: beyond that a bigger group gains little over the fsync
// it amortises, and costs memory. maxJobs follows it (startup.go).
const groupJobs = 4

// nosyncMaxGroup caps the group when the WAL does not fsync: there is no
// fsync to spread, and bigger groups made bbolt dirty new pages rather
// than reuse them.
const nosyncMaxGroup = 512

// eventCost is what a buffered event holds in memory besides its payload
// (the event, its position and input id headers): the memory cap counts
// it, so that a group of tiny events is bounded too.
const eventCost = 80

// grouping sizes the commit group: how many events the buffer takes before
// it is written. Every commit has a fixed cost (the fsync, the pages around
// the rows), so under load the group doubles while every poll finds the
// input still full, up to ceiling, and halves back toward
// agent.bulk-max-size once the input runs dry: a quiet input still waits
// no longer than flush-interval-ms. Jobs grow with it only past the
// fast-disk group, and no further than maxBulkJobSize rows, the most
// bulk-max-size may ask (jobRows): jobs that come back unsent are
// released in one transaction that rewrites their rows, and on a full
// disk that has only the WAL's reserve.
//
// The ceiling follows the disk (adapt): groupJobs jobs' rows, raised so
// that a commit's disk time costs each row at most queue.fsync-share of
// its time. So does the group's byte bound: queue.group-max-bytes, or,
// when the rows the disk asks for hold more than that, their bytes, up to
// queue.slow-disk-group-max-bytes. A group ends at that many bytes of
// payloads, whatever its count.
type grouping struct {
	size    int // events the buffer takes before it is written
	floor   int // agent.bulk-max-size
	ceiling int // the most size grows to; a floor above it still rules
	// base is the ceiling while the disk is fast or not yet measured:
	// groupJobs jobs' rows (nosyncMaxGroup without fsync).
	base int
	// maxBytes bounds the payload bytes of a group now (full), and
	// with eventCost its events (adapt): fastBytes, or up to slowBytes
	// when the disk asks for more rows than fastBytes holds.
	maxBytes int
	// fastBytes is queue.group-max-bytes, slowBytes
	// queue.slow-disk-group-max-bytes (never below fastBytes), each at
	// most a quarter of queue.max-bytes.
	fastBytes, slowBytes int
	// share is queue.fsync-share; 0 when the ceiling stays at base
	// (the option at 0, or no fsync to spread).
	share float64
	// inputFull: the last poll stopped at a full group, not because the
	// inputs had nothing more.
	inputFull bool
	// loaded: the last commit that appended took a full group at the
	// ceiling (the input outran the biggest group); with inputFull false
	// the buffer holds the rest of a burst (burstEnded).
	loaded bool
}

// newGrouping is the grouping of o's settings for jobs of jobSize rows,
// starting at agent.bulk-max-size. wal says the queue is the WAL.
func newGrouping(o Options, jobSize int, wal bool) grouping {
	fast := o.Queue.groupMaxBytes()
	g := grouping{floor: max(1, o.Agent.BulkMaxSize), base: groupJobs * jobSize,
		maxBytes: fast, fastBytes: fast, slowBytes: o.Queue.slowDiskGroupMaxBytes(),
		share: o.Queue.FsyncShare}
	if wal && !o.WAL.Fsync {
		g.base = min(nosyncMaxGroup, maxJobs*jobSize)
		g.share = 0
	}
	if !wal {
		g.share = 0
	}
	g.ceiling = g.base
	g.reset()
	return g
}

// reset starts the group again at agent.bulk-max-size (start, reload, a
// failed transaction: the buffer then holds no more than the setting says).
func (g *grouping) reset() { g.size = g.floor }

// grow adapts the group after a commit that wrote the buffer: double while
// the input kept the buffer full, halve back once it ran dry. On a disk
// measured slow (a ceiling above base) a full input takes the ceiling at
// once: every doubling there would cost a slow commit of a small group.
func (g *grouping) grow() {
	g.loaded = g.inputFull && g.size >= g.ceiling
	if g.inputFull {
		if g.ceiling > g.base {
			g.size = max(g.floor, g.ceiling)
			return
		}
		g.size = max(g.floor, min(g.size*2, g.ceiling))
		return
	}
	g.size = max(g.floor, g.size/2)
}

// adapt sets the ceiling and the byte bound from what commits cost. A
// row's time is the loop's time per row (c.perRow) plus its part of the
// commit's disk time (c.disk / group); the disk's part is at most share
// when
//
//	group >= disk · (1 − share) / (share · perRow)
//
// so the ceiling is that many rows, never below base. The byte bound is
// fastBytes while those rows fit in it (c.rowBytes and eventCost each);
// past it, what they take, up to slowBytes: only a disk too slow for a
// fastBytes group pays memory for a bigger one. The rows are bounded by
// the byte bound at eventCost per event too. Throughput under load is then about
// (1 − share) / perRow whatever the fsync latency, until the memory
// bound: beyond it, about group / (disk + group · perRow). Until both
// figures are measured the ceiling is base and the bound fastBytes. A
// group above a lower ceiling comes down to it at the next grow.
func (g *grouping) adapt(c *commitCost) {
	if g.share <= 0 {
		return
	}
	g.ceiling, g.maxBytes = g.base, g.fastBytes
	if c.disk <= 0 || c.perRow <= 0 {
		return
	}
	want := float64(c.disk) * (1 - g.share) / (g.share * c.perRow)
	if need := want * (c.rowBytes + eventCost); need > float64(g.fastBytes) {
		g.maxBytes = int(min(need, float64(g.slowBytes)))
	}
	limit := float64(g.maxBytes / eventCost)
	if want > float64(g.base) {
		g.ceiling = max(g.base, int(min(want, limit)))
	}
}

// burstEnded reports whether the last commit that appended took a full
// group at the ceiling and the input has run dry since: what the buffer
// holds is the rest of a burst. A group below the ceiling does not count:
// an input at a moderate rate fills one and runs dry at every other poll,
// and its lines wait for their group as before (fewer commits on flash).
func (g *grouping) burstEnded() bool { return g.loaded && !g.inputFull }

// full reports whether b holds a whole group: size events, or maxBytes
// of payloads.
func (g *grouping) full(b *eventBuffer) bool {
	return b.len() >= g.size || b.bytes >= g.maxBytes
}
