package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/tap"
)

// loop is the scheduler goroutine's state. It owns the inputs, the queue
// and the event buffer, and is not safe for concurrent use (see doc.go).
// Each policy it follows owns its own state: grouping (how big a commit
// is), jobs and link (how much goes to the sender, and when), claims (when
// to look for due rows), rowRetry (refused rows), walRetry (a failing
// WAL), cleanup (ACKED rows past retention), reloads (a pending reload).
type loop struct {
	r   *Agent
	log *slog.Logger
	// sendLog is log for what delivery reports (results, refusals, dead
	// rows): never shipped as the agent's own logs (unshipped).
	sendLog *slog.Logger
	in      inputSet
	q       queue
	// walq is the WAL under q; nil in NON mode.
	walq    *walQueue
	nonMode bool
	sender  *sendLoop // runs on its own goroutine once Run starts it
	send    senderRun

	buf   eventBuffer
	group grouping
	// cost is what commits cost, which the group's ceiling follows.
	cost commitCost
	// memLimit follows the group's memory past group-max-bytes.
	memLimit memoryLimit
	jobs     jobSlots
	// uncommitted are send results not yet in a transaction.
	uncommitted []*jobResult
	link        linkPacing
	claims      claimPolicy
	rowRetry    rowRetries
	walRetry    walRetry
	cleanup     cleanupPolicy
	reloads     reloadState
	// resurrect: rows left SENDING by the previous run, still to be
	// returned to PENDING (a full disk at start, see openWAL).
	resurrect []uint64
	// resultsSince is when the oldest of uncommitted came back.
	resultsSince time.Time

	markStarted   bool // MarkStarted not yet committed
	polled        bool // the inputs have been polled at least once
	backpressured bool
	// drops is the episode of drops not logged yet (drops.go).
	drops dropEpisode

	// exitOnRefusal: output.on-refusal is exit, so AUTH_FAILED and
	// DECRYPT_FAILED stop the agent instead of pausing sending.
	exitOnRefusal bool
	fatal         error // a refusal under exitOnRefusal: stop the agent
	// ck is CHECKPOINT delivery's state; nil in the other modes.
	ck *checkpointing
}

// inputSet are the inputs, polled round-robin from cursor.
type inputSet struct {
	list   []*source
	wakeup *wakeMux // fans in the inputs' "new data" signals
	cursor int      // the input the next poll starts with
	idle   []bool   // scratch for poll: inputs that had nothing this turn
}

// turn does one scheduler iteration and reports whether anything moved.
func (l *loop) turn(ctx context.Context) (bool, error) {
	progressed := l.takeAdmin()
	progressed = l.collect() || progressed
	if l.fatal != nil {
		return progressed, l.fatal
	}
	now := l.r.now()
	n, err := l.poll(ctx, now)
	if err != nil {
		return progressed, err
	}
	progressed = progressed || n > 0
	// Results that came back while the input was read ride in this
	// commit too: otherwise they waited a whole turn, their rows SENDING
	// and their jobs' slots taken for one more group's read.
	progressed = l.collect() || progressed
	committed, err := l.commitIfDue(now)
	if err != nil {
		return progressed || committed, err
	}
	asked := l.dispatchCheckpoint(now)
	return progressed || committed || asked, nil
}

// collect takes every result the sender has sent back, without waiting.
func (l *loop) collect() bool {
	got := false
	for {
		select {
		case res := <-l.send.results:
			l.accept(res)
			got = true
		default:
			return got
		}
	}
}

// accept records a job result for the next commit and reacts to why the
// Send stopped, if it did.
func (l *loop) accept(res *jobResult) {
	if len(l.uncommitted) == 0 {
		l.resultsSince = l.r.now()
	}
	l.jobs.done(res.job.seq)
	l.tapSent(res)
	res.job.forgetPayloads()
	l.uncommitted = append(l.uncommitted, res)
	wasDown := l.link.down
	l.link.observe(res)
	if lw, ok := l.q.(linkWatcher); ok && wasDown && !l.link.down {
		lw.linkUp()
	}
	if l.ck != nil && l.ck.accept(res, l.r.now(), l.sendLog) {
		return
	}
	err := res.err
	if err == nil || res.skipped || errors.Is(err, context.Canceled) {
		return
	}
	now := l.r.now()
	l.r.pub.setError(err, now)
	switch {
	case isRefusal(err) && l.exitOnRefusal:
		if l.fatal == nil {
			l.fatal = fatalError(err)
		}
	case isRefusal(err):
		msg, fix := refusalAdvice(err)
		l.sendLog.Error(msg, slog.String("fix", fix),
			slog.String(keyError, err.Error()), slog.Duration("retry_in", res.retryAt.Sub(now).Round(time.Millisecond)))
	case isRejected(err):
		l.sendLog.Error("engine rejected the connection; another collector holds the EdgeSocket ingress, retrying at the maximum backoff",
			slog.String(keyError, err.Error()), slog.Duration("retry_in", res.retryAt.Sub(now).Round(time.Millisecond)))
	default:
		l.sendLog.Warn("output unavailable (engine down, or console reader gone); rows stay queued and input keeps being read",
			slog.String(keyError, err.Error()), slog.Duration("retry_in", res.retryAt.Sub(now).Round(time.Millisecond)))
	}
}

// poll reads the inputs into the buffer until the buffer holds
// bulk-max-size events or no input has anything more, unless the queue is
// full. Each round offers every input an equal share of the room left,
// starting one input further each call, so a flooded input cannot starve
// the others.
func (l *loop) poll(ctx context.Context, now time.Time) (int, error) {
	if l.checkBackpressure() {
		return 0, nil
	}
	bulk := l.group.size
	pollMax := max(1, l.r.opts.Queue.PollBatchSize)
	n := len(l.in.list)
	first, idle := l.in.round()
	total := 0
	for !l.group.full(&l.buf) {
		share := max(1, (bulk-l.buf.len())/n)
		got := 0
		for k := 0; k < n && !l.group.full(&l.buf); k++ {
			i := (first + k) % n
			if idle[i] {
				continue
			}
			m, err := l.pollOne(ctx, now, l.in.list[i], min(pollMax, share, bulk-l.buf.len()))
			got += m
			if err != nil {
				return total + got, err
			}
			idle[i] = m == 0
		}
		total += got
		if got == 0 {
			break
		}
	}
	l.group.inputFull = l.group.full(&l.buf)
	return total, nil
}

// round starts a poll round: the input to start with, one further each
// round, and a cleared scratch of which inputs had nothing.
func (s *inputSet) round() (first int, idle []bool) {
	n := len(s.list)
	if cap(s.idle) < n {
		s.idle = make([]bool, n)
	}
	idle = s.idle[:n]
	clear(idle)
	first = s.cursor % max(1, n)
	s.cursor = first + 1
	return first, idle
}

// pollOne appends up to max events of s to the buffer.
func (l *loop) pollOne(ctx context.Context, now time.Time, s *source, max int) (int, error) {
	before := l.buf.len()
	var err error
	l.buf.events, err = s.in.Poll(ctx, l.buf.events, max)
	l.polled = true
	l.tapEvents(tap.StageInput, s, before, now)
	read := l.process(s, before, now)
	l.tapEvents(tap.StageProcessed, s, before, now)
	got := l.buf.len() - before
	l.tagBuffered(s.id, before, now, read)
	if err != nil {
		return got, fmt.Errorf("read input %s: %w", s.id, err)
	}
	return got, nil
}

// process runs s's processors over the buffer's events from before on and
// returns how many of them the input returned with a payload, or -1
// without processors (tagBuffered counts them then, in the loop it makes
// anyway).
func (l *loop) process(s *source, before int, now time.Time) int {
	if s.proc == nil {
		return -1
	}
	read := payloads(l.buf.events[before:])
	l.buf.events = s.proc.Process(l.buf.events, before, now)
	return read
}

// tagBuffered records that the buffer's events from before on came from
// input id, and counts read the events the input returned with a payload
// (before its processors dropped or folded any; -1: those in the buffer).
func (l *loop) tagBuffered(id string, before int, now time.Time, read int) {
	n := l.buf.tag(id, before, now)
	if read < 0 {
		read = n
	}
	l.r.ctr.eventsRead.Add(uint64(read))
}

// payloads counts the events that carry one.
func payloads(events []input.Event) int {
	n := 0
	for i := range events {
		if events[i].Payload != nil {
			n++
		}
	}
	return n
}

// checkBackpressure reports whether input reading must pause, logging
// once when entering and once when leaving that state.
func (l *loop) checkBackpressure() bool {
	l.tickDrops(l.r.now())
	full, size := l.q.Full(l.backpressured)
	if full != l.backpressured {
		l.backpressured = full
		l.r.pub.set(func(p *published) { p.backpressure = full })
		if full {
			l.log.Warn("queue above queue.max-bytes; pausing input until rows are acknowledged",
				slog.Int64("queue_bytes", size), slog.Int64("max_bytes", l.r.opts.Queue.MaxBytes))
		} else {
			l.log.Info("queue back under queue.max-bytes (three quarters of it under when-full: block); resuming input", slog.Int64("queue_bytes", size))
		}
	}
	return full
}

// wait sleeps until something may have changed: a send result, new input
// data (when the input signals it), the flush deadline, the end of a send
// pause, a retry becoming due, or idle-sleep-ms.
func (l *loop) wait(ctx context.Context) {
	now := l.r.now()
	d := l.r.opts.Agent.IdleSleep
	wake := func(t time.Time) {
		if !t.IsZero() && t.After(now) && t.Sub(now) < d {
			d = t.Sub(now)
		}
	}
	if l.buf.len() > 0 {
		wake(l.buf.since.Add(l.commitWait()))
	}
	if len(l.uncommitted) > 0 {
		wake(l.resultsSince.Add(l.r.opts.Agent.CommitInterval))
	}
	if l.jobs.free() > 0 {
		wake(l.link.pausedUntil)
		wake(l.claims.nextRetryAt)
	}
	wakeup := l.in.wakeup.C()
	if l.backpressured || l.group.full(&l.buf) {
		wakeup = nil // the inputs would not be polled anyway
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case res := <-l.send.results:
		l.accept(res)
	case req := <-l.r.admin:
		l.serveAdmin(req)
	case <-wakeup:
	case req := <-l.r.reloads:
		l.reloads.hold(req)
	}
}
