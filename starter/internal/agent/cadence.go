package agent

import "time"

// Commit cadence at low rates. Every WAL commit rewrites a few pages and
// the meta page whatever it holds, so on flash the cost of a quiet input
// is the number of commits, not the bytes. Two things may wait for a later
// commit without a crash keeping less:
//
//   - events that carry an input position: until that position commits,
//     a restart reads them again from their file;
//   - acknowledgements: until an ack commits, a restart sends the row
//     again (a duplicate, never a loss).
//
// Both wait at most agent.commit-interval-ms, so at low rates one commit
// carries the lines of that interval and the acks of the previous one.
// Everything that frees space, makes rows due or reports a failure still
// commits at once. The rest of a burst, the lines read after the last
// full group at the ceiling once the input ran dry, waits at most
// idle-sleep-ms: they belong to the burst, not to a low rate, and an
// input that only caught up with its writer for a moment fills the group
// again within that.

// commitWait is how long the buffer may wait for its commit: at most
// idle-sleep-ms for the rest of a burst (grouping.burstEnded), else
// flush-interval-ms, or commit-interval-ms if longer when the queue is
// the WAL and every buffered event has a position.
func (l *loop) commitWait() time.Duration {
	a := l.r.opts.Agent
	if l.group.burstEnded() {
		return min(a.IdleSleep, a.FlushInterval)
	}
	if l.walq != nil && l.buf.unpositioned == 0 {
		return max(a.FlushInterval, a.CommitInterval)
	}
	return a.FlushInterval
}

// resultsMayWait reports whether the send results in p may wait for a
// later commit instead of committing on their own now: the queue is the
// WAL, they are all acks (no failure or release: those rows are due
// again), the oldest has waited less than commit-interval-ms, and nothing
// else is due: no rows waiting to be claimed (draining a backlog needs
// each ack's claim at once), no full queue or disk (acks make room), no
// cleanup, no start mark.
func (l *loop) resultsMayWait(now time.Time, p *plan) bool {
	if l.walq == nil || len(p.fails) > 0 || len(p.releases) > 0 || len(p.resurrect) > 0 {
		return false
	}
	if l.markStarted || l.backpressured || l.walRetry.holdAppends(now) {
		return false
	}
	c := &l.claims
	if c.queuedRows != 0 || c.hint || (!c.nextRetryAt.IsZero() && !now.Before(c.nextRetryAt)) {
		return false
	}
	if l.cleanup.due(now, false, l.r.opts.Queue.AckedRetention) {
		return false
	}
	return len(l.uncommitted) == 0 || now.Sub(l.resultsSince) < l.r.opts.Agent.CommitInterval
}
