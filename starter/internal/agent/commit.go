package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport"
)

// maxReasonLen bounds the failure reason stored with a row.
const maxReasonLen = 200

// resurrectChunk is how many rows left SENDING by the previous run one
// transaction returns to PENDING after a start on a full disk: each is
// rewritten, so the chunk must fit the WAL's disk reserve with ~1 KiB rows.
const resurrectChunk = 64

// plan is everything one transaction will do; it is computed before the
// transaction so that a failed commit can be retried unchanged.
type plan struct {
	writes  []sourceWrite // per input, in the order they first appear in the buffer
	flushed int           // events taken from the buffer
	started bool
	// claimJobs is how many jobs to claim, of at most claimRows rows
	// and claimBytes payload bytes each.
	claimJobs, claimRows, claimBytes int
	cleanup                          bool
	// flushedBytes is the payload bytes of the events taken.
	flushedBytes int

	acks []uint64
	// receives (CHECKPOINT) are rows the engine RECEIVED, kept until a
	// checkpoint covers them; ackThrough acks every one whose batch id
	// is <= it.
	receives   []uint64
	ackThrough int64
	fails      map[string][]uint64 // reason → row ids
	releases   []uint64
	resurrect  []uint64 // rows left SENDING by the previous run
	notBefore  time.Time
	streak     int // rowRetries.streak after this commit
}

func (p *plan) empty() bool {
	return p.flushed == 0 && !p.started && p.claimJobs == 0 && !p.cleanup &&
		len(p.acks) == 0 && len(p.fails) == 0 && len(p.releases) == 0 && len(p.resurrect) == 0 &&
		len(p.receives) == 0 && p.ackThrough == 0
}

// commitIfDue runs one transaction when there is something to write:
// buffered events, send results, rows to claim, or a cleanup; at low
// rates buffered lines and acks wait for one another (cadence.go). While
// appends are held back after a failed append (disk full), send results,
// claims and cleanups still commit on their own: that is what frees space.
func (l *loop) commitIfDue(now time.Time) (bool, error) {
	if l.walRetry.blocked(now) {
		return false, nil
	}
	holdAppends := l.walRetry.holdAppends(now)
	flushDue := l.group.full(&l.buf) ||
		(l.buf.len() > 0 && now.Sub(l.buf.since) >= l.commitWait())
	p := &plan{streak: l.rowRetry.streak}
	l.planResults(p, now)
	p.resurrect = l.resurrect[:min(len(l.resurrect), resurrectChunk)]
	if !flushDue && l.resultsMayWait(now, p) {
		return false, nil // the acks ride on the next commit that appends
	}
	// Once a transaction is paid for anyway, buffered events ride along:
	// fewer fsyncs, lower latency.
	if !holdAppends && (flushDue || !p.empty()) {
		l.buf.planFlush(p)
	}
	p.started = !holdAppends && l.markStarted && (p.flushed > 0 || (l.polled && l.buf.len() == 0))
	p.claimJobs, p.claimRows = l.claimWanted(now, p.flushed > 0 || len(p.releases) > 0 || len(p.fails) > 0 || len(p.resurrect) > 0)
	if l.ck.holdsClaims() {
		p.claimJobs = 0 // nothing new before the session is settled
	}
	p.claimRows, p.claimBytes = l.r.rate.jobBound(p.claimRows, l.jobBytes())
	retention := l.r.opts.Queue.AckedRetention
	p.cleanup = l.cleanup.due(now, false, retention)
	if p.empty() {
		return false, nil
	}
	p.cleanup = l.cleanup.due(now, true, retention)
	return l.commit(now, p)
}

// planResults plans the uncommitted send results and, in CHECKPOINT
// delivery, the watermark the engine reported since the last commit.
func (l *loop) planResults(p *plan, now time.Time) {
	planResults(p, l.uncommitted, &l.rowRetry, now, l.ck != nil)
	if l.ck != nil && l.ck.reported > l.ck.applied {
		p.ackThrough = l.ck.reported
	}
}

// planResults sorts the uncommitted send results into acks, charged failures
// and releases, and computes when failed rows may be sent again.
func planResults(p *plan, results []*jobResult, retry *rowRetries, now time.Time, checkpoint bool) {
	for _, res := range results {
		failed, received := false, false
		for i, r := range res.job.rows {
			out := res.results[i]
			switch out.Outcome {
			case transport.Received:
				if checkpoint {
					p.receives = append(p.receives, r.ID)
				} else {
					p.acks = append(p.acks, r.ID)
				}
				received = true
			case transport.Failed:
				if isRefusal(out.Err) {
					// The engine refused our token or key, not this
					// row (a Sender may still report the batch it
					// answered so as Failed): charging it would make
					// rows DEAD while an operator fixes the setting.
					p.releases = append(p.releases, r.ID)
					continue
				}
				if p.fails == nil {
					p.fails = make(map[string][]uint64)
				}
				reason := reasonOf(out.Err)
				p.fails[reason] = append(p.fails[reason], r.ID)
				failed = true
			default:
				p.releases = append(p.releases, r.ID)
			}
		}
		if failed {
			p.streak++
		} else if received {
			p.streak = 0
		}
	}
	if len(p.fails) > 0 {
		p.notBefore = retry.notBefore(now, p.streak)
	}
}

func reasonOf(err error) string {
	if err == nil {
		return "failed"
	}
	s := err.Error()
	if len(s) > maxReasonLen {
		s = s[:maxReasonLen]
	}
	return s
}

// sourceWrite is what a transaction writes for one input: its rows and
// the last position per key, stored under the input's id.
type sourceWrite struct {
	id string
	// events is how many of the buffer's events are the input's,
	// position-only ones included (what input.Acker counts).
	events    int
	payloads  [][]byte
	losses    []lossAt // reported by the input (losses.go)
	positions []input.Position
	idx       map[string]int // position key → index in positions
	// While planFlush runs: posAt[k] is the buffer index of the last
	// event with positions[k]'s key, last the k of the last key seen.
	posAt []int
	last  int
}

// planFlush takes the whole buffer: one row per event with a payload, and
// the last position per key (position-only events included), per input.
func (b *eventBuffer) planFlush(p *plan) {
	if b.len() == 0 {
		return
	}
	p.flushed = b.len()
	p.flushedBytes = b.bytes
	var w *sourceWrite
	for i := range b.events {
		if id := b.ids[i]; w == nil || w.id != id {
			w = p.write(id, b.len()-i)
		}
		ev := &b.events[i]
		w.events++
		if ev.Payload != nil {
			w.payloads = append(w.payloads, ev.Payload)
		}
		if ev.Loss != nil {
			w.noteLoss(ev.Loss)
		}
		if ev.Pos.Key == "" {
			continue
		}
		// Runs of events come from one file: compare with the key last
		// seen before paying for a map lookup, and note only where each
		// key's last event is (positions are copied once, below).
		if w.last >= 0 && b.events[w.posAt[w.last]].Pos.Key == ev.Pos.Key {
			w.posAt[w.last] = i
			continue
		}
		k, ok := w.idx[ev.Pos.Key]
		if !ok {
			k = len(w.posAt)
			w.idx[ev.Pos.Key] = k
			w.posAt = append(w.posAt, i)
		}
		w.posAt[k] = i
		w.last = k
	}
	for i := range p.writes {
		w := &p.writes[i]
		w.positions = make([]input.Position, len(w.posAt))
		for k, at := range w.posAt {
			w.positions[k] = b.events[at].Pos
		}
	}
}

// write returns the plan's writes for input id, adding them (sized for up
// to n more events) the first time.
func (p *plan) write(id string, n int) *sourceWrite {
	for i := range p.writes {
		if p.writes[i].id == id {
			return &p.writes[i]
		}
	}
	p.writes = append(p.writes, sourceWrite{id: id, payloads: make([][]byte, 0, n), idx: make(map[string]int), last: -1})
	return &p.writes[len(p.writes)-1]
}

// rows is how many rows the plan appends.
func (p *plan) rows() int {
	n := 0
	for i := range p.writes {
		n += len(p.writes[i].payloads)
	}
	return n
}

// claimWanted returns how many jobs to claim and the rows each may hold:
// enough to fill the free job slots, unless sending is paused or there is
// no sign of due rows (claimPolicy); while the link is down, one probe of
// probeRows when no job is out.
func (l *loop) claimWanted(now time.Time, hint bool) (jobs, rows int) {
	free := l.jobs.free()
	if free <= 0 || l.link.paused(now) {
		// Rows this commit makes due wait for the first commit that may
		// claim, not for the periodic look (claimRecheckInterval).
		l.claims.hint = l.claims.hint || hint
		return 0, 0
	}
	jobs, rows = free, l.jobRows()
	if l.link.down {
		if len(l.jobs.out) > 0 {
			return 0, 0
		}
		jobs, rows = 1, probeRows
	}
	if !l.claims.due(now, hint) {
		return 0, 0
	}
	return jobs, rows
}

// jobRows is the rows a job may claim: jobSize, or more when
//   - the commit group grew past groupJobs jobs on a slow disk: a
//     groupJobs-th of the group (at most maxBulkJobSize, the largest job
//     bulk-max-size may ask for), so that a commit hands out what it
//     appends;
//   - the link can keep more rows in flight than the jobs out would hold
//     (a long link): the jobs out then hold twice the client's link
//     bound, up to maxLinkJobSize rows (and jobBytes) each. A short
//     link's bound is no more than a job.
func (l *loop) jobRows() int {
	n := max(l.jobs.size, min((l.group.size+groupJobs-1)/groupJobs, maxBulkJobSize))
	if l.sender != nil {
		n = max(n, min(2*l.sender.linkRows()/maxJobs, maxLinkJobSize))
	}
	return n
}

// jobBytes bounds the payload bytes of one job (its first row whatever
// its size) while the disk keeps up, so that the jobs out hold at most
// maxJobs·jobBytes whatever the size of the events; it also bounds a
// PACKET job's encoded copy.
const jobBytes = 1 << 20

// jobBytes is the payload bound of the next job: jobBytes, or a
// groupJobs-th of the group's byte bound once a slow disk grew it past
// that, so that the jobs out still hold two groups (maxJobs): jobs are
// handed out only at commits, and the commits of a slow disk are far
// apart.
func (l *loop) jobBytes() int { return max(jobBytes, l.group.maxBytes/groupJobs) }

// appends reports whether the plan writes input: rows, positions or the
// started mark. These grow the WAL; everything else mostly frees space.
func (p *plan) appends() bool { return p.flushed > 0 || p.started }

// withoutAppends is p with only the send results, claims and cleanup:
// positions stay with their rows, so they are dropped together.
func (p *plan) withoutAppends() *plan {
	q := *p
	q.writes, q.flushed, q.started = nil, 0, false
	return &q
}

// commitResult is what a committed transaction returned.
type commitResult struct {
	claimed [][]row // a job's rows each
	// bounded: the last claim stopped at its bound in rows or bytes,
	// rather than for want of due rows.
	bounded bool
	counts  queueCounts
	dead    int
	deleted int
	more    bool
	drops   queueDrops
	// ackedThrough is how many RECEIVED rows the watermark acked.
	ackedThrough int
}

// commit runs the plan in one transaction. A failed transaction (disk full,
// I/O error) is not fatal: nothing is lost because the buffer and the
// results are kept, input reading stops once the buffer is full, and the
// commit is retried with a growing delay. When a transaction that appends
// fails, the rest of it is committed at once on its own: on a full disk
// the appends cannot go in, but acks and deletes can, and they are what
// makes room (a commit that always carried the appends would never ack).
func (l *loop) commit(now time.Time, p *plan) (bool, error) {
	res, err := l.runPlan(now, p)
	if err == nil {
		// While appends are held back, a commit without them says nothing
		// about the appends, unless none are waiting any more.
		if p.appends() || !l.walRetry.onlyAppends || l.buf.len() == 0 {
			l.walRecovered()
		}
		l.afterCommit(now, p, res)
		if !p.appends() && l.walRetry.onlyAppends && freedSpace(p, res, l.r.opts.Queue.AckedRetention) {
			// Room was made: try the held-back appends at the next turn.
			l.walRetry.retryNow()
		}
		return true, nil
	}
	if !p.appends() {
		l.walFailed(now, err, false)
		return false, nil
	}
	rest := p.withoutAppends()
	if rest.empty() {
		l.walFailed(now, err, true)
		return false, nil
	}
	res, rerr := l.runPlan(now, rest)
	if rerr != nil {
		l.walFailed(now, errors.Join(err, rerr), false)
		return false, nil
	}
	l.walFailed(now, err, true)
	l.afterCommit(now, rest, res)
	if freedSpace(rest, res, l.r.opts.Queue.AckedRetention) {
		l.walRetry.retryNow()
	}
	return true, nil
}

// freedSpace says whether a committed plan deleted rows, which frees pages
// in the WAL file that appends can reuse without the disk growing.
func freedSpace(p *plan, res commitResult, retention time.Duration) bool {
	return res.deleted > 0 || (len(p.acks) > 0 && retention == 0)
}

// runPlan runs p in one transaction.
func (l *loop) runPlan(now time.Time, p *plan) (commitResult, error) {
	var res commitResult
	err := l.q.Update(func(tx queueTx) error {
		res = commitResult{}
		if err := l.applyPlan(tx, p, now, &res.dead); err != nil {
			return err
		}
		if len(p.receives) > 0 || p.ackThrough > 0 {
			ct, ok := tx.(checkpointTx)
			if !ok {
				return fmt.Errorf("delivery-guarantee CHECKPOINT: the queue (%T) cannot hold rows as received", tx)
			}
			if len(p.receives) > 0 {
				if err := ct.Receive(p.receives, now); err != nil {
					return err
				}
			}
			if p.ackThrough > 0 {
				n, err := ct.AckThrough(p.ackThrough, now)
				if err != nil {
					return err
				}
				res.ackedThrough = n
			}
		}
		// After the appends, so that they make room for themselves;
		// before the claims, which then take what the bounds kept.
		var err error
		if res.drops, err = tx.Drop(now); err != nil {
			return err
		}
		// A claim per job: each stops at claimRows or claimBytes.
		for range p.claimJobs {
			rows, bounded, err := tx.Claim(p.claimRows, p.claimBytes, now)
			if err != nil {
				return err
			}
			if len(rows) > 0 {
				res.claimed = append(res.claimed, rows)
			}
			res.bounded = bounded
			if !bounded {
				break // no more due rows
			}
		}
		if p.cleanup {
			if res.deleted, res.more, err = tx.CleanupAcked(now); err != nil {
				return err
			}
		}
		res.counts, err = tx.Counts()
		return err
	})
	return res, err
}

func (l *loop) applyPlan(tx queueTx, p *plan, now time.Time, dead *int) error {
	if len(p.acks) > 0 {
		if err := tx.Ack(p.acks, now); err != nil {
			return err
		}
	}
	for reason, ids := range p.fails {
		n, err := tx.Fail(ids, p.notBefore, reason, now)
		if err != nil {
			return err
		}
		*dead += n
	}
	if len(p.releases) > 0 {
		if err := tx.Release(p.releases, now); err != nil {
			return err
		}
	}
	if len(p.resurrect) > 0 {
		if err := tx.Release(p.resurrect, now); err != nil {
			return err
		}
	}
	for i := range p.writes {
		w := &p.writes[i]
		if err := w.appendRows(tx); err != nil {
			return err
		}
		if len(w.positions) > 0 {
			if err := tx.SavePositions(w.id, w.positions); err != nil {
				return err
			}
		}
	}
	if p.started {
		for _, s := range l.in.list {
			if err := tx.MarkStarted(s.id); err != nil {
				return err
			}
		}
	}
	return nil
}

// walFailed records a failed transaction and when to try again.
// onlyAppends says that the send results, claims and cleanups still
// commit: only the appends of the buffer are held back.
func (l *loop) walFailed(now time.Time, err error, onlyAppends bool) {
	report := l.walRetry.failed(now, onlyAppends)
	l.group.reset()
	l.r.pub.setError(err, now)
	l.r.pub.set(func(p *published) { p.walErr = err.Error() })
	if !report {
		return
	}
	attrs := []any{slog.String(keyError, err.Error()), slog.Int("failures", l.walRetry.errs), slog.Int("buffered_events", l.buf.len())}
	if onlyAppends {
		l.log.Error("cannot append to the WAL; acks and deletes still commit so delivery frees space, input stays paused once the buffer is full, nothing is dropped", attrs...)
		return
	}
	l.log.Error("cannot write the WAL; input stays paused once the buffer is full, nothing is dropped", attrs...)
}

// walRecovered is called after a transaction committed that was not one
// of the acks-only commits made while appends are held back.
func (l *loop) walRecovered() {
	if n := l.walRetry.recovered(); n > 0 {
		l.log.Info("WAL writable again", slog.Int("failures", n))
		l.r.pub.set(func(p *published) { p.walErr = "" })
	}
}
