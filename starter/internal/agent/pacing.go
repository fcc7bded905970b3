package agent

import (
	"time"

	"github.com/edge-agent/edge-agent/transport/backoff"
)

// jobSlots are the jobs handed to the sender and not yet come back.
type jobSlots struct {
	out     map[uint64]*job
	nextSeq uint64
	// limit is how many may be out: maxJobs, or 0 while the loop stops or
	// reloads (no new job).
	limit int
	size  int // rows per job (jobSize)
}

func newJobSlots(size int) jobSlots {
	return jobSlots{out: make(map[uint64]*job), limit: maxJobs, size: size}
}

func (s *jobSlots) free() int { return s.limit - len(s.out) }

// add makes a job of rows, the next in sequence, and counts it out.
func (s *jobSlots) add(rows []row) *job {
	s.nextSeq++
	j := &job{seq: s.nextSeq, rows: rows}
	s.out[j.seq] = j
	return j
}

// done counts a job back.
func (s *jobSlots) done(seq uint64) { delete(s.out, seq) }

// rows counts the rows of the jobs out.
func (s *jobSlots) rows() int {
	n := 0
	for _, j := range s.out {
		n += len(j.rows)
	}
	return n
}

// takeAll counts every job back and returns them.
func (s *jobSlots) takeAll() []*job {
	jobs := make([]*job, 0, len(s.out))
	for _, j := range s.out {
		jobs = append(jobs, j)
	}
	clear(s.out)
	return jobs
}

// linkPacing is what the sends said of the link to the engine: when new
// jobs may go out, and whether the link is down.
type linkPacing struct {
	// pausedUntil: no new job before this (engine unreachable, rejecting
	// or refusing us).
	pausedUntil time.Time
	// down: the last Send stopped on the connection and none has gone
	// through since. Until one does, the loop hands out one probeRows job
	// at a time instead of full ones. With bounds that drop (drop-oldest,
	// max-age) the link starts down, at start and when a reload replaces
	// the output: full jobs claimed before the first connect fails keep
	// their rows SENDING, which no drop touches, for the whole connect,
	// so a start during an outage would drop the rows read since instead
	// of the oldest.
	down bool
}

// observe takes what a job's result says of the link.
func (p *linkPacing) observe(res *jobResult) {
	switch {
	case res.skipped:
		// Held back by the sender: says nothing new about the link.
	case res.err == nil:
		p.down = false
	case !res.retryAt.IsZero():
		p.down = true
	}
	if res.retryAt.After(p.pausedUntil) {
		p.pausedUntil = res.retryAt
	}
}

func (p *linkPacing) paused(now time.Time) bool { return now.Before(p.pausedUntil) }

// probeRows is the size of the job the loop hands out while the link is
// down: a claimed row that comes back unsent is rewritten in the WAL, so a
// long outage must not rewrite the head of the backlog at every attempt,
// and one row is enough to learn that a session opens.
const probeRows = 1

// claimRecheckInterval is how often the loop looks for due rows even when
// nothing hinted at them (rows failed in an earlier run whose NotBefore
// has now passed).
const claimRecheckInterval = time.Second

// claimPolicy decides whether a commit looks for due rows: only when
// something says there may be some, so an idle agent commits nothing.
type claimPolicy struct {
	hint        bool      // rows may be due: try a claim
	nextRetryAt time.Time // the earliest NotBefore the loop set
	lastCheck   time.Time
	// queuedRows are the PENDING rows as of the last commit (exact: the
	// loop is the queue's only writer).
	queuedRows int64
}

// due says whether to claim now; hint: this commit makes rows due anyway.
func (c *claimPolicy) due(now time.Time, hint bool) bool {
	if !c.nextRetryAt.IsZero() && !now.Before(c.nextRetryAt) {
		c.hint, c.nextRetryAt = true, time.Time{}
	}
	if hint || c.hint {
		return true
	}
	// An empty queue needs no look (and no fsync); rows delayed by a
	// failure of an earlier run are looked for now and then.
	return c.queuedRows != 0 && now.Sub(c.lastCheck) >= claimRecheckInterval
}

// retryAt notes that failed rows become due at t.
func (c *claimPolicy) retryAt(t time.Time) {
	if c.nextRetryAt.IsZero() || t.Before(c.nextRetryAt) {
		c.nextRetryAt = t
	}
}

// claimed notes a claim at now; bounded: it stopped at its bound in rows
// or bytes, so more rows may be due.
func (c *claimPolicy) claimed(now time.Time, bounded bool) {
	c.lastCheck, c.hint = now, bounded
}

// rowRetries paces rows the engine refused (retry.*): the wait before one
// is sent again grows with the streak of jobs that had a refused row.
type rowRetries struct {
	policy backoff.Policy
	streak int // consecutive jobs with a Failed row, as of the last commit
}

func newRowRetries(o Options, streak int) rowRetries {
	return rowRetries{policy: backoff.Policy{Initial: o.Retry.Backoff, Max: o.Retry.BackoffMax}, streak: streak}
}

// notBefore is when rows failed at now may be sent again, streak being the
// streak with their jobs.
func (r *rowRetries) notBefore(now time.Time, streak int) time.Time {
	return now.Add(r.policy.Jittered(streak - 1))
}
