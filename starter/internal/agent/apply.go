package agent

import (
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// afterCommit updates the loop's state once a transaction is durable:
// only now do the buffer, the results and the counters move on.
func (l *loop) afterCommit(now time.Time, p *plan, res commitResult) {
	claimed, counts, dead, more := res.claimed, res.counts, res.dead, res.more
	ctr := &l.r.ctr
	ctr.commits.Add(1)
	l.noteCommitCost(p)
	if p.flushed > 0 {
		l.buf.drop(p.flushed, p.flushedBytes, now)
		ctr.rowsAppended.Add(uint64(p.rows()))
		l.group.grow()
		l.ackCommitted(p)
	}
	if p.started {
		l.markStarted = false
	}
	l.uncommitted = l.uncommitted[:0]
	l.rowRetry.streak = p.streak
	ctr.acked.Add(uint64(len(p.acks) + res.ackedThrough))
	ctr.received.Add(uint64(len(p.receives)))
	if l.ck != nil {
		l.ck.committed(now, p.ackThrough, counts.Received)
	}
	ctr.released.Add(uint64(len(p.releases)))
	nFailed := 0
	for _, ids := range p.fails {
		nFailed += len(ids)
	}
	ctr.failed.Add(uint64(nFailed))
	if nFailed > 0 {
		l.claims.retryAt(p.notBefore)
	}
	if len(p.releases) > 0 {
		l.claims.hint = true
	}
	if len(p.resurrect) > 0 {
		l.resurrect = l.resurrect[len(p.resurrect):]
		l.claims.hint = true
		if len(l.resurrect) == 0 {
			l.log.Info("rows left SENDING by the previous run are all PENDING again")
		}
	}
	l.reportDead(nFailed, dead)
	l.noteDrops(now, res.drops)
	if p.cleanup {
		l.cleanup.ran(now, more)
	}
	if p.claimJobs > 0 {
		l.claims.claimed(now, res.bounded)
		l.dispatch(claimed)
	}
	l.cleanup.acked, l.claims.queuedRows = counts.Acked, counts.Pending
	l.publish(counts)
}

// ackCommitted tells each input that implements input.Acker how many of
// its events the transaction just committed stored. Only ever called
// once the transaction returned without error: that is the durability
// an Acker waits for.
func (l *loop) ackCommitted(p *plan) {
	for i := range p.writes {
		w := &p.writes[i]
		if w.events == 0 {
			continue
		}
		for _, s := range l.in.list {
			if s.id != w.id {
				continue
			}
			if a, ok := s.in.(input.Acker); ok {
				a.Committed(w.events)
			}
			break
		}
	}
}

func (l *loop) reportDead(failed, dead int) {
	if dead == 0 {
		return
	}
	if l.nonMode {
		total := l.r.ctr.dropped.Add(uint64(dead))
		l.sendLog.Warn("dropped events the engine refused (delivery-guarantee NON does not retry)",
			slog.Int("dropped", dead), slog.Uint64("dropped_total", total))
		return
	}
	total := l.r.ctr.dead.Add(uint64(dead))
	l.sendLog.Warn("rows reached retry.max-attempts and are DEAD; `edge-agent db wal-retry-dead` queues them again",
		slog.Int("dead", dead), slog.Uint64("dead_total", total), slog.Int("failed", failed))
}

// dispatch hands the claimed jobs to the sender. The jobs channel has
// room for maxJobs, and no more jobs are out: there was a claim
// per free slot at most.
func (l *loop) dispatch(claimed [][]row) {
	if len(claimed) == 0 {
		return
	}
	for _, rows := range claimed {
		for _, r := range rows {
			if r.Attempts > 0 {
				l.r.ctr.retries.Add(1)
			}
		}
		l.send.jobs <- l.jobs.add(rows)
	}
	if l.sender != nil {
		l.sender.announce()
	}
}

// publish copies the queue figures for Snapshot.
func (l *loop) publish(c queueCounts) {
	_, size := l.q.Full(l.backpressured)
	file := l.q.FileBytes()
	l.r.pub.set(func(p *published) {
		p.queue = QueueStatus{
			Pending: c.Pending, Sending: c.Sending, Acked: c.Acked, Dead: c.Dead, Received: c.Received,
			PayloadBytes: c.PayloadBytes, SizeBytes: size, FileBytes: file, Lanes: c.Lanes,
		}
		p.oldest = c.OldestPending
	})
}

// dispatchCheckpoint hands the sender the settle or poll job due now
// (CHECKPOINT delivery), if any.
func (l *loop) dispatchCheckpoint(now time.Time) bool {
	if l.ck == nil {
		return false
	}
	if stall := l.ck.stall(now, l.log); stall != l.ck.published {
		l.ck.published = stall
		l.r.pub.set(func(p *published) { p.checkpointStall = stall })
	}
	if l.jobs.free() <= 0 || l.link.paused(now) {
		return false
	}
	req, err := l.ck.job(now, len(l.jobs.out))
	if err != nil {
		l.sendLog.Error("cannot settle with the engine", slog.String(keyError, err.Error()))
		l.r.pub.setError(err, now)
		return false
	}
	if req == nil {
		return false
	}
	j := l.jobs.add(nil)
	j.settle = req
	l.send.jobs <- j
	return true
}
