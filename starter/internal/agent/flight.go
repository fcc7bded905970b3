package agent

import "time"

// commitFlight is a commit running on its own goroutine while the loop
// reads and encodes the next group (double buffering). At most one is in
// flight: the next plan is made only once this one has landed, so a
// plan never sees the state a commit still in flight will change, and
// bbolt's single writer is never contended by the loop. While it flies
// the loop only reads input and takes send results; nothing it planned
// (rows to the sender, positions to the inputs, results out of
// uncommitted) moves on before land, after the transaction is durable.
// Two groups may then be in memory, the one in flight and the one being
// read, each bounded by queue.group-max-bytes: on a slow disk the disk
// sets the cycle and a commit carries what the bound lets it, so halving
// the bound would halve the rate there.
type commitFlight struct {
	p    *plan
	now  time.Time
	done chan struct{}
	// Written by the commit's goroutine before done closes.
	res commitResult
	err error
}

// overlapCommits says whether a commit may run beside the reading of the
// next group: with the WAL, except in CHECKPOINT delivery, whose
// settling reads the WAL's received rows between commits.
func (l *loop) overlapCommits() bool { return l.walq != nil && l.ck == nil }

// newGroup is the grouping of o for this loop.
func (l *loop) newGroup(o Options) grouping {
	g := newGrouping(o, l.jobs.size, l.walq != nil)
	g.overlap = l.overlapCommits()
	return g
}

// startCommit runs p on its own goroutine. The buffer p flushed becomes
// the one in flight (held) and the loop reads into the other.
func (l *loop) startCommit(now time.Time, p *plan) {
	if p.flushed > 0 {
		l.buf, l.held = l.held, l.buf
		p.from = &l.held
	}
	f := &commitFlight{p: p, now: now, done: make(chan struct{})}
	l.flight = f
	go func() {
		defer close(f.done)
		f.res, f.err = l.runPlan(now, p)
	}()
}

// flightDone is the channel that closes when the commit in flight ends;
// nil (never ready) when none flies.
func (l *loop) flightDone() <-chan struct{} {
	if l.flight == nil {
		return nil
	}
	return l.flight.done
}

// landIfDone lands the commit in flight if it has ended, without
// waiting, and reports whether one landed.
func (l *loop) landIfDone() bool {
	if l.flight == nil {
		return false
	}
	select {
	case <-l.flight.done:
		return l.land()
	default:
		return false
	}
}

// settleCommit waits for the commit in flight, if any, and lands it:
// everything that writes the WAL outside commitIfDue (shutdown, reload,
// admin requests) or changes what a transaction reads calls it first.
func (l *loop) settleCommit() {
	if l.flight != nil {
		l.land()
	}
}

// land takes the outcome of the commit in flight, waiting for it, as
// commit does for a commit run in place. A failed transaction gives its
// events back to the front of the buffer, before those read meanwhile,
// so the retry writes them in order with their positions.
func (l *loop) land() bool {
	f := l.flight
	<-f.done
	l.flight = nil
	if f.err != nil && f.p.from == &l.held {
		l.buf.prepend(&l.held)
		f.p.from = &l.buf
	}
	f.p.flew = true
	return l.committed(f.now, f.p, f.res, f.err)
}
