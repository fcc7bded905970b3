package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// How often the loop looks for due rows even when nothing hinted at them
// (rows failed in an earlier run whose NotBefore has now passed).
const claimRecheckInterval = time.Second

// Bounds of how often a transaction is run only to delete ACKED rows past
// queue.acked-retention-ms (a tenth of the retention, within these). Any
// transaction that runs anyway also cleans up.
const (
	minCleanupInterval = time.Second
	maxCleanupInterval = time.Minute
)

// loop is the scheduler goroutine's state. It owns the input, the queue and
// the event buffer; it is not safe for concurrent use (see doc.go).
type loop struct {
	r   *Agent
	log *slog.Logger
	// inputs are polled round-robin from pollCursor; the single `input:`
	// form is one of them, under the id settled at start.
	inputs     []*source
	singleID   string // the single `input:`'s id as settled at start
	pollCursor int
	pollIdle   []bool // scratch for poll: inputs that had nothing this turn
	q          queue
	walq       *walQueue // the WAL under q; nil in NON mode
	nonMode    bool
	sender     *sendLoop // runs on its own goroutine once Run starts it
	// rowRetry paces a row the engine refused (retry.*).
	rowRetry backoff.Policy

	buf []input.Event
	// bufIDs[i] is the id of the input buf[i] came from.
	bufIDs   []string
	bufSince time.Time
	// group is how many events the buffer takes before it is written: it
	// starts at agent.bulk-max-size and doubles, up to maxGroup, while
	// every poll finds the input still full, and halves back when the
	// input runs dry (growGroup); maxGroupBytes of payloads also end a
	// group. A commit's fixed cost (fsync, the pages
	// around the rows) is then spread over many rows under load, while a
	// quiet input still waits no longer than flush-interval-ms. Jobs do
	// not grow with it: the jobs that come back unsent are released in
	// one transaction that rewrites their rows, and on a full disk that
	// has only the WAL's 1 MiB reserve (package wal, "Full disk"); with
	// jobs grown to 512 rows of 1 KiB two of them no longer fit and the
	// backlog stayed SENDING (TestFullDiskAcksCommitAndBacklogDrains).
	group int
	// bufBytes is the payload bytes in buf (maxGroupBytes).
	bufBytes int
	// inputFull: the last poll stopped at a full group, not because the
	// input had nothing more.
	inputFull bool
	wakeup    *wakeMux // fans in the inputs' "new data" signals

	jobs    chan *job
	results chan *jobResult
	// sendBase is the sender's context before cancelSend; a reload stops
	// the sender (cancelSend, then senderDone) and starts another.
	sendBase    context.Context
	cancelSend  context.CancelFunc
	senderDone  <-chan struct{}
	reloadReq   *reloadRequest // taken by wait, applied by run
	outstanding map[uint64]*job
	nextSeq     uint64
	maxJobs     int
	jobSize     int
	uncommitted []*jobResult // send results not yet in a transaction

	pausedUntil    time.Time // no new job before this (engine unreachable/rejecting)
	failStreak     int       // consecutive jobs with a Failed row
	claimHint      bool      // rows may be due: try a claim
	nextRetryAt    time.Time // earliest NotBefore we set
	lastClaimCheck time.Time
	lastCleanup    time.Time
	moreCleanup    bool
	acked          int64 // ACKED rows as of the last commit
	queuedRows     int64 // PENDING rows as of the last commit (exact: the loop is the only writer)
	// linkDown: the last Send stopped on the connection (engine
	// unreachable, rejecting or refusing us) and none has gone through
	// since. Until one does, the loop hands out one probeRows job at a
	// time instead of maxJobs full ones (claimWanted).
	linkDown bool

	// resurrect: rows left SENDING by the previous run, still to be
	// returned to PENDING (a full disk at start, see openWAL).
	resurrect []uint64

	markStarted   bool // MarkStarted not yet committed
	polled        bool // the input has been polled at least once
	backpressured bool

	walErrs    int       // consecutive failed transactions
	walRetryAt time.Time // no transaction before this (disk full, …)
	// onlyAppendsFail: the last failure was of a transaction that appended,
	// and its send results, claims and cleanup committed without the
	// appends; until walRetryAt only such transactions run.
	onlyAppendsFail bool

	// exitOnRefusal: output.on-refusal is exit, so AUTH_FAILED and
	// DECRYPT_FAILED stop the agent instead of pausing sending.
	exitOnRefusal bool
	fatal         error // a refusal under exitOnRefusal: stop the agent
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
	return progressed || committed, err
}

// collect takes every result the sender has sent back, without waiting.
func (l *loop) collect() bool {
	got := false
	for {
		select {
		case res := <-l.results:
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
	delete(l.outstanding, res.job.seq)
	l.uncommitted = append(l.uncommitted, res)
	switch {
	case res.skipped:
		// Held back by the sender: says nothing new about the link.
	case res.err == nil:
		l.linkDown = false
	case !res.retryAt.IsZero():
		l.linkDown = true
	}
	if res.retryAt.After(l.pausedUntil) {
		l.pausedUntil = res.retryAt
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
		l.log.Error(msg, slog.String("fix", fix),
			slog.String(keyError, err.Error()), slog.Duration("retry_in", res.retryAt.Sub(now).Round(time.Millisecond)))
	case isRejected(err):
		l.log.Error("engine rejected the connection; another collector holds the EdgeSocket ingress, retrying at the maximum backoff",
			slog.String(keyError, err.Error()), slog.Duration("retry_in", res.retryAt.Sub(now).Round(time.Millisecond)))
	default:
		l.log.Warn("output unavailable (engine down, or console reader gone); rows stay queued and input keeps being read",
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
	bulk := l.group
	pollMax := max(1, l.r.opts.Queue.PollBatchSize)
	n := len(l.inputs)
	if cap(l.pollIdle) < n {
		l.pollIdle = make([]bool, n)
	}
	idle := l.pollIdle[:n]
	clear(idle)
	first := l.pollCursor % max(1, n)
	l.pollCursor = first + 1
	total := 0
	for !l.groupFull() {
		share := max(1, (bulk-len(l.buf))/n)
		got := 0
		for k := 0; k < n && !l.groupFull(); k++ {
			i := (first + k) % n
			if idle[i] {
				continue
			}
			m, err := l.pollOne(ctx, now, l.inputs[i], min(pollMax, share, bulk-len(l.buf)))
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
	l.inputFull = l.groupFull()
	return total, nil
}

// pollOne appends up to max events of s to the buffer.
func (l *loop) pollOne(ctx context.Context, now time.Time, s *source, max int) (int, error) {
	before := len(l.buf)
	var err error
	l.buf, err = s.in.Poll(ctx, l.buf, max)
	l.polled = true
	got := len(l.buf) - before
	l.tagBuffered(s.id, before, now)
	if err != nil {
		return got, fmt.Errorf("read input %s: %w", s.id, err)
	}
	return got, nil
}

// tagBuffered records that buf[before:] came from input id.
func (l *loop) tagBuffered(id string, before int, now time.Time) {
	if len(l.buf) == before {
		return
	}
	if before == 0 {
		l.bufSince = now
	}
	for range len(l.buf) - before {
		l.bufIDs = append(l.bufIDs, id)
	}
	l.countRead(l.buf[before:])
}

func (l *loop) countRead(evs []input.Event) {
	n := 0
	for i := range evs {
		if evs[i].Payload != nil {
			n++
			l.bufBytes += len(evs[i].Payload)
		}
	}
	l.r.ctr.eventsRead.Add(uint64(n))
}

// checkBackpressure reports whether input reading must pause, logging
// once when entering and once when leaving that state.
func (l *loop) checkBackpressure() bool {
	full, size := l.q.Full(l.backpressured)
	if full != l.backpressured {
		l.backpressured = full
		l.r.pub.set(func(p *published) { p.backpressure = full })
		if full {
			l.log.Warn("queue above queue.max-bytes; pausing input until rows are acknowledged",
				slog.Int64("queue_bytes", size), slog.Int64("max_bytes", l.r.opts.Queue.MaxBytes))
		} else {
			l.log.Info("queue below three quarters of queue.max-bytes; resuming input", slog.Int64("queue_bytes", size))
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
	if len(l.buf) > 0 {
		wake(l.bufSince.Add(l.flushInterval()))
	}
	if len(l.outstanding) < l.maxJobs {
		wake(l.pausedUntil)
		wake(l.nextRetryAt)
	}
	wakeup := l.wakeup.C()
	if l.backpressured || l.groupFull() {
		wakeup = nil // the inputs would not be polled anyway
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case res := <-l.results:
		l.accept(res)
	case req := <-l.r.admin:
		l.serveAdmin(req)
	case <-wakeup:
	case req := <-l.r.reloads:
		l.reloadReq = req
	}
}

func (l *loop) flushInterval() time.Duration {
	return l.r.opts.Agent.FlushInterval
}

// The group's bounds (see loop.group). With fsync on, lines/s is about
// the group over the time of one turn: reading and encoding the group,
// then the commit and its fsync, one after the other. Every commit has a
// fixed cost (the fsync, the pages around the rows), so the group should
// be large. With schema 2 (a key per row), 512 -> 2,048 rows cut CPU from
// 9.2 to 7.7 s per 1M lines and 4,096 gained nothing more. The block
// WAL (schema 3) writes a group's payloads once, as few blocks, so a
// bigger group costs nothing more per row: at four times the jobs in
// flight (8,192 rows by default) or 4 MiB of payloads, 1M lines of
// ~200 B with fsync on took 4.98-5.05 CPU-s instead of 5.30-5.57, 7.9-10.4 s
// instead of 10.4-16.1 s, and wrote 154-167 MB instead of 182-202 MB
// (3 interleaved runs each, load average 6-7), for 44 MiB of peak RSS
// instead of 32. With the GC at 200 % (process.TuneGC) and the WAL's
// block cache, that group took peak RSS to 60-67 MiB (raw-fsync,
// PACKET), over the 64 MiB the agent must stay under; two turns (4,096
// rows) or 2 MiB keep it at 51-55 MiB for ~0.15 CPU-s more per 1M lines.
// maxGroupBytes keeps a group of big events (multiline stack traces,
// long JSON) from holding more than that in memory and in one
// transaction.
const maxGroupBytes = 2 << 20

// groupJobs is how many jobs' rows a group may hold (4,096 by default).
// maxJobs follows it (startup.go), not the other way round: a group of
// two turns of the jobs in flight took the memory over 64 MiB, and
// beyond 4,096 rows a bigger group gains little over the fsync it
// amortises.
const groupJobs = 4

// maxGroup is the most events a group grows to. bulk-max-size above it
// still sets the group.
func (l *loop) maxGroup() int {
	if l.walq != nil && !l.r.opts.WAL.Fsync {
		return min(nosyncMaxGroup, maxJobs*l.jobSize)
	}
	return groupJobs * l.jobSize
}

// nosyncMaxGroup caps the group when the WAL does not fsync
// (queue.fsync: false): there is no fsync to spread, and bigger groups
// made bbolt dirty new pages instead of reusing the same ones, so the
// disk writes per 1M lines went from 5-15 to 250-270 MB for no CPU gain
// (measured as above, 2 runs each).
const nosyncMaxGroup = 512

// groupFull reports whether the buffer holds a whole group: group events,
// or maxGroupBytes of payloads.
func (l *loop) groupFull() bool {
	return len(l.buf) >= l.group || l.bufBytes >= maxGroupBytes
}

// resetGroup starts the group again at agent.bulk-max-size (start,
// reload, a failed transaction: the buffer then holds no more than the
// setting says).
func (l *loop) resetGroup() {
	l.group = max(1, l.r.opts.Agent.BulkMaxSize)
}

// growGroup adapts the group after a commit that wrote the buffer: double
// while the input kept the buffer full, halve back toward bulk-max-size
// once it ran dry.
func (l *loop) growGroup() {
	floor := max(1, l.r.opts.Agent.BulkMaxSize)
	if l.inputFull {
		l.group = max(floor, min(l.group*2, l.maxGroup()))
		return
	}
	l.group = max(floor, l.group/2)
}
