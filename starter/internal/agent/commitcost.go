package agent

import (
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// commitCost follows what WAL commits cost, the figures the commit group
// is sized from (grouping.adapt): a commit's disk time, the loop's time
// per row while the input keeps it busy, disk time excluded, and a row's
// payload bytes. All are moving averages, each observation weighing 1/costWeight, so a
// disk that slows down or speeds up is followed within a few dozen
// commits and one slow fsync moves the estimate by an eighth. Not safe
// for concurrent use: the loop's.
type commitCost struct {
	// disk is the estimate of one commit's disk time (its writes and
	// fdatasyncs); 0 until a commit was measured.
	disk time.Duration
	// perRow is the estimate of the loop's time per appended row, in
	// nanoseconds: reading, processing and building the transaction;
	// 0 until measured under load.
	perRow float64
	// rowBytes is the estimate of an appended row's payload bytes; 0
	// until a commit appended rows.
	rowBytes float64
	// since is when the last commit that appended a full group ended;
	// zero when the last appending commit was not under load (the time
	// since then holds waits, not work).
	since time.Time
	// diskSince is the disk time of the commits since then.
	diskSince time.Duration
}

// costWeight: each observation moves an estimate by 1/costWeight of its
// distance.
const costWeight = 8

// observe records a commit that ended at end, spent disk on the disk and
// appended rows of nbytes payload bytes; loaded says the group it appended was full (the input
// had more). The loop's time per row is taken from the span between two
// such commits, less the disk time of every commit in it.
func (c *commitCost) observe(end time.Time, disk time.Duration, rows, nbytes int, loaded bool) {
	if disk > 0 {
		c.disk = ewma(c.disk, disk)
	}
	c.diskSince += disk
	if rows == 0 {
		return
	}
	if per := float64(nbytes) / float64(rows); c.rowBytes == 0 {
		c.rowBytes = per
	} else {
		c.rowBytes += (per - c.rowBytes) / costWeight
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
	l.cost.observe(l.r.now(), disk, p.rows(), p.flushedBytes, l.group.inputFull)
	l.group.adapt(&l.cost)
	l.memLimit.follow(l.group.maxBytes - l.group.fastBytes)
	l.walq.w.SetDecodedCacheExtra(l.group.maxBytes - l.group.fastBytes)
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

// SlowDiskGroupMaxBytes is the most payload bytes a commit group grows to
// on a disk too slow for a GroupMaxBytes group
// (queue.slow-disk-group-max-bytes, a quarter of queue.max-bytes).
func SlowDiskGroupMaxBytes(q QueueSettings) int { return q.slowDiskGroupMaxBytes() }
