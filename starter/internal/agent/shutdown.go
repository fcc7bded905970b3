package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/transport"
)

// Pause between attempts to write the WAL during shutdown.
const shutdownRetry = 50 * time.Millisecond

// stopDeadline is when a graceful stop (or a reload's settling) begun now
// under o must be done: agent.shutdown-timeout-ms from now.
func stopDeadline(o Options) time.Time {
	timeout := o.Agent.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultSettings().ShutdownTimeout
	}
	return time.Now().Add(timeout)
}

// shutdown stops the agent in the order it started, backwards, bounded by
// agent.shutdown-timeout-ms: stop reading (drain held-back groups), flush
// the buffer and the send results to the WAL, let the engine answer the
// jobs in flight (settleOnStop), stop the sender, record what it
// returned, close input, sender and WAL. cause is why the loop ended
// (nil: ctx done); it is returned, or a shutdown failure when cause is nil.
func (r *Agent) shutdown(l *loop, cause error) error {
	start := r.now()
	deadline := stopDeadline(r.opts)
	r.pub.set(func(p *published) { p.state = "stopping" })
	if cause == nil {
		r.log.Info("Shutdown signal received; stopping edge agent.")
	} else {
		r.log.Error("stopping edge agent", slog.String(keyError, cause.Error()))
	}

	// No new jobs from here on: the rest of the loop only records.
	l.jobs.limit = 0
	l.drainInputs(allInputs)
	flushErr := l.flushUntil(deadline)

	l.settleOnStop(deadline)
	senderStuck := l.stopSender(deadline)
	if err := l.flushUntil(deadline); err != nil && flushErr == nil {
		flushErr = err
	}

	var closeErrs []error
	l.in.wakeup.stop()
	for _, s := range l.in.list {
		if err := s.in.Close(); err != nil {
			closeErrs = append(closeErrs, fmt.Errorf("close input %s: %w", s.id, err))
		}
	}
	if err := l.sender.snd.Close(); err != nil {
		closeErrs = append(closeErrs, fmt.Errorf("close output: %w", err))
	}
	r.wal.Store(nil)
	if err := l.q.Close(); err != nil {
		closeErrs = append(closeErrs, fmt.Errorf("close queue: %w", err))
	}
	if senderStuck {
		closeErrs = append(closeErrs, errors.New("stop sender: Send did not return after Close"))
	}
	r.pub.set(func(p *published) { p.state = "stopped" })
	r.logSummary(l, start, flushErr, closeErrs)
	if cause != nil {
		return cause
	}
	if err := errors.Join(append([]error{flushErr}, closeErrs...)...); err != nil {
		return fmt.Errorf("stop edge agent: %w", err)
	}
	return nil
}

// settleOnStop lets the engine answer the jobs the sender has begun
// before it is stopped (those handed over but not begun are taken back:
// nothing of them is on the wire): cutting them short would release rows the
// engine may have received, and the next start would send them again
// (up to output.max-in-flight of them per session). It waits until half
// of the time left before deadline, no longer: the other half is for
// stopping a sender that ignores its context and writing the results to
// the WAL, which a silent engine must not take from them. What is still
// unanswered then is released uncharged, as before.
func (l *loop) settleOnStop(deadline time.Time) {
	l.reclaimQueued()
	inFlight := l.jobs.rows()
	if inFlight == 0 {
		return
	}
	start := time.Now()
	bound := start.Add(time.Until(deadline) / 2)
	l.log.Info("waiting for the engine to answer the batches in flight",
		slog.Int("rows", inFlight), slog.Duration("at_most", bound.Sub(start).Round(time.Millisecond)))
	l.settleJobs(bound)
	if left := l.jobs.rows(); left > 0 {
		l.log.Warn("the engine did not answer every batch in flight before the stop; those rows are sent again at the next start",
			slog.Int("rows", left), slog.Duration("waited", time.Since(start).Round(time.Millisecond)))
	}
}

// reclaimQueued takes back the jobs waiting in the sender's channel. The
// channel hands each job to one receiver, so a job is either taken back
// here or begun by the sender, never both. They are released uncharged.
// A job the sender took and encoded ahead, but has not begun to Send, it
// hands back itself (handBack): it comes back NotSent like these.
func (l *loop) reclaimQueued() {
	l.sender.handBack()
	for {
		select {
		case j := <-l.send.jobs:
			l.jobs.done(j.seq)
			l.uncommitted = append(l.uncommitted, &jobResult{job: j, results: notSent(j, transport.ErrClosed)})
		default:
			return
		}
	}
}

// drainInputs moves the held-back groups (multiline) of the inputs for
// which which(id) holds into the buffer: they are about to be closed.
func (l *loop) drainInputs(which func(id string) bool) {
	for _, s := range l.in.list {
		if !which(s.id) {
			continue
		}
		before, now := l.buf.len(), l.r.now()
		l.buf.events = s.in.Drain(l.buf.events)
		read := l.process(s, before, now)
		// Nothing is held past a drain: the input closes next.
		l.buf.events = s.proc.Flush(l.buf.events, now)
		l.tagBuffered(s.id, before, now, read)
	}
}

func allInputs(string) bool { return true }

// senderRun is the sender goroutine's side of the loop: the channels the
// jobs go out and their results come back on, and how to stop it.
type senderRun struct {
	jobs    chan *job
	results chan *jobResult
	// base is the sender's context before cancel; a reload stops the
	// sender (cancel, then done) and starts another.
	base   context.Context
	cancel context.CancelFunc
	done   <-chan struct{}
}

// startSender runs the sender loop on its own goroutine, with fresh job
// channels (a stopped sender may have left jobs in the old one).
func (l *loop) startSender() {
	jobs, results := make(chan *job, maxJobs), make(chan *jobResult, maxJobs)
	ctx, cancel := context.WithCancel(l.send.base)
	done := make(chan struct{})
	l.send = senderRun{jobs: jobs, results: results, base: l.send.base, cancel: cancel, done: done}
	l.sender.reclaimed.Store(false)
	go func(s *sendLoop) {
		defer close(done)
		s.run(ctx, jobs, results)
	}(l.sender)
}

// stopSender stops the sender goroutine: in-flight sends end NotSent
// (released uncharged at the next commit) or with whatever reply already
// came back. It reports whether the sender was stuck in a Send that
// ignored both its context and Close; its jobs' results are then unknown.
func (l *loop) stopSender(deadline time.Time) (stuck bool) {
	l.send.cancel()
	if !waitUntil(l.send.done, deadline) {
		// Close unblocks a Send that ignores its context.
		_ = l.sender.snd.Close()
		stuck = !waitUntil(l.send.done, time.Now().Add(time.Second))
	}
	if stuck {
		return true
	}
	l.collect()
	for _, j := range l.jobs.takeAll() {
		l.uncommitted = append(l.uncommitted, &jobResult{job: j, results: notSent(j, transport.ErrClosed)})
	}
	return false
}

// flushUntil writes the buffer and the uncommitted results to the queue,
// retrying a failing WAL until the deadline. Events that cannot be written
// are not lost: their input positions were not saved either, so the next
// start reads them again.
func (l *loop) flushUntil(deadline time.Time) error {
	l.walRetry.retryNow()
	for {
		if l.buf.len() == 0 && len(l.uncommitted) == 0 {
			return nil
		}
		p := &plan{streak: l.rowRetry.streak}
		now := l.r.now()
		l.planResults(p, now)
		l.buf.planFlush(p)
		p.started = l.markStarted && p.flushed > 0
		var err error
		if _, err = l.commit(now, p); err == nil && l.walRetry.errs == 0 {
			continue
		}
		if time.Now().Add(shutdownRetry).After(deadline) {
			return fmt.Errorf("flush to the WAL before the shutdown timeout: %d buffered events not written (they are read again at the next start): %s",
				l.buf.len(), l.r.Snapshot().LastError)
		}
		time.Sleep(shutdownRetry)
	}
}

func waitUntil(done <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(max(0, time.Until(deadline)))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

func (r *Agent) logSummary(l *loop, start time.Time, flushErr error, closeErrs []error) {
	st := r.Snapshot()
	attrs := []any{
		slog.Duration("took", r.now().Sub(start).Round(time.Millisecond)),
		slog.Uint64("events_read", st.EventsRead),
		slog.Uint64("rows_appended", st.RowsAppended),
		slog.Uint64("acked", st.Acked),
		slog.Uint64("failed", st.Failed),
		slog.Uint64("dead", st.Dead),
		slog.Int64("pending", st.Queue.Pending+st.Queue.Sending),
	}
	if l.nonMode {
		attrs = append(attrs, slog.Uint64("dropped", st.Dropped))
	}
	if err := errors.Join(append([]error{flushErr}, closeErrs...)...); err != nil {
		r.log.Error("edge agent stopped with errors", append(attrs, slog.String(keyError, err.Error()))...)
		return
	}
	r.log.Info("edge agent stopped", attrs...)
}
