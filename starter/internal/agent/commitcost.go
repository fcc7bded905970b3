package agent

import (
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// commitCost follows what WAL commits cost, the two figures the commit
// group is sized from (grouping.adapt): a commit's disk time, and the
// loop's time per row while the input keeps it busy, disk time excluded.
// Both are moving averages, each observation weighing 1/costWeight, so a
// disk that slows down or speeds up is followed within a few dozen
// commits and one slow fsync moves the estimate by an eighth. Not safe
// for concurrent use: the loop's.
type commitCost struct {
	// disk is the estimate of one commit's disk time (its writes and
	// fdatasyncs); 0 until a commit was measured.
	disk time.Duration
	// perRow is the estimate of the loop's time per appended row, in
	// nanoseconds: reading, processing and (unless the commit runs on
	// its own goroutine) building the transaction; 0 until measured
	// under load.
	perRow float64
	// since is when the last commit that appended a full group ended;
	// zero when the last appending commit was not under load (the time
	// since then holds waits, not work).
	since time.Time
	// diskSince is the disk time of the commits since then.
	diskSince time.Duration
	// planned is when the last plan that flushed the buffer was made,
	// waited the loop's time in wait since then: the loop's busy time
	// in between (busy) is what it spent reading the next group.
	planned time.Time
	waited  time.Duration
}

// busy is the loop's time since the last plan that flushed the buffer,
// its waits excluded, and starts the count again from now; 0 the first
// time.
func (c *commitCost) busy(now time.Time) time.Duration {
	var d time.Duration
	if !c.planned.IsZero() {
		d = now.Sub(c.planned) - c.waited
	}
	c.planned, c.waited = now, 0
	return d
}

// costWeight: each observation moves an estimate by 1/costWeight of its
// distance.
const costWeight = 8

// observe records a commit that ended at end, spent disk on the disk and
// appended rows; loaded says the group it appended was full (the input
// had more). The loop's time per row is taken from the span between two
// such commits, less the disk time of every commit in it.
func (c *commitCost) observe(end time.Time, disk time.Duration, rows int, loaded bool) {
	if disk > 0 {
		c.disk = ewma(c.disk, disk)
	}
	c.diskSince += disk
	if rows == 0 {
		return
	}
	if loaded && !c.since.IsZero() {
		if busy := end.Sub(c.since) - c.diskSince; busy > 0 {
			per := float64(busy) / float64(rows)
			if c.perRow == 0 {
				c.perRow = per
			} else {
				c.perRow += (per - c.perRow) / costWeight
			}
		}
	}
	c.since, c.diskSince = time.Time{}, 0
	if loaded {
		c.since = end
	}
}

// observeOverlapped records a commit that ran on its own goroutine
// beside the reading of the next group (flight.go): the span between two
// commits then no longer is the loop's time plus the disk's, so the
// loop's time is taken where it is spent: reading, the loop's time
// (waits excluded) from the plan before to the plan of the rows the
// commit appended, is perRow's sample when the group was full. Building
// the transaction is the commit goroutine's, beside the loop's.
func (c *commitCost) observeOverlapped(disk, reading time.Duration, rows int, loaded bool) {
	if disk > 0 {
		c.disk = ewma(c.disk, disk)
	}
	if rows == 0 || !loaded || reading <= 0 {
		return
	}
	per := float64(reading) / float64(rows)
	if c.perRow == 0 {
		c.perRow = per
	} else {
		c.perRow += (per - c.perRow) / costWeight
	}
}

func ewma(avg, x time.Duration) time.Duration {
	if avg == 0 {
		return x
	}
	return avg + (x-avg)/costWeight
}

// noteCommitCost measures the commit of p, just made durable, and sets
// the group's ceiling from what commits cost now. Before the group grows
// (afterCommit): the growth is bounded by the new ceiling.
func (l *loop) noteCommitCost(p *plan) {
	if l.walq == nil || !l.r.opts.WAL.Fsync {
		return // no fsync to measure or spread
	}
	disk := l.walq.w.CommitDiskTime()
	l.r.ctr.fsync.observe(disk)
	if p.flew {
		l.cost.observeOverlapped(disk, p.reading, p.rows(), p.loaded)
	} else {
		l.cost.observe(l.r.now(), disk, p.rows(), p.loaded)
	}
	l.group.adapt(&l.cost)
	est := CommitEstimate{Disk: l.cost.disk, GroupCeiling: l.group.ceiling}
	if l.cost.perRow > 0 {
		est.PerRow = time.Duration(l.cost.perRow)
	}
	l.r.pub.set(func(pub *published) { pub.commit = est })
}

// FastGroup is the most events a WAL commit group holds while the disk's
// fsync is cheap, with these settings; out is the output's config (its
// window sizes the jobs). `edge-agent check disk` reads a disk against it.
func FastGroup(a Settings, q QueueSettings, out output.Config) int {
	return groupJobs * jobSize(Options{Agent: a, Queue: q, Output: out})
}

// GroupMaxBytes is the byte bound of a commit group with these settings
// (queue.group-max-bytes, a quarter of queue.max-bytes).
func GroupMaxBytes(q QueueSettings) int { return q.groupMaxBytes() }
