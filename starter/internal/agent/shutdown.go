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

// shutdown stops the agent in SPEC §2 order, bounded by
// agent.shutdown-timeout-ms: stop reading (drain held-back groups), flush
// the buffer and the send results to the WAL, stop the sender, record what
// it returned, close input, sender and WAL. cause is why the loop ended
// (nil: ctx done); it is returned, or a shutdown failure when cause is nil.
func (r *Agent) shutdown(l *loop, cause error, cancelSend context.CancelFunc, senderDone <-chan struct{}) error {
	start := r.now()
	timeout := r.opts.Agent.ShutdownTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	deadline := time.Now().Add(timeout)
	r.pub.set(func(p *published) { p.state = "stopping" })
	if cause == nil {
		r.log.Info("Shutdown signal received; stopping edge agent.")
	} else {
		r.log.Error("stopping edge agent", slog.String(keyError, cause.Error()))
	}

	// No new jobs from here on: the rest of the loop only records.
	l.maxJobs = 0
	before := len(l.buf)
	l.buf = l.in.Drain(l.buf)
	if n := len(l.buf) - before; n > 0 {
		if before == 0 {
			l.bufSince = r.now()
		}
		l.countRead(l.buf[before:])
	}
	flushErr := l.flushUntil(deadline)

	// Stop the sender; in-flight sends end NotSent (released below) or
	// with whatever reply already came back.
	cancelSend()
	senderStuck := false
	if !waitUntil(senderDone, deadline) {
		// Close unblocks a Send that ignores its context.
		_ = l.sender.snd.Close()
		senderStuck = !waitUntil(senderDone, time.Now().Add(time.Second))
	}
	if !senderStuck {
		l.collect()
		for _, j := range l.outstanding {
			l.uncommitted = append(l.uncommitted, &jobResult{job: j, results: notSent(j, transport.ErrClosed)})
		}
		clear(l.outstanding)
	}
	if err := l.flushUntil(deadline); err != nil && flushErr == nil {
		flushErr = err
	}

	var closeErrs []error
	if err := l.in.Close(); err != nil {
		closeErrs = append(closeErrs, fmt.Errorf("close input: %w", err))
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

// flushUntil writes the buffer and the uncommitted results to the queue,
// retrying a failing WAL until the deadline. Events that cannot be written
// are not lost: their input positions were not saved either, so the next
// start reads them again.
func (l *loop) flushUntil(deadline time.Time) error {
	l.walRetryAt = time.Time{}
	for {
		if len(l.buf) == 0 && len(l.uncommitted) == 0 {
			return nil
		}
		p := &plan{streak: l.failStreak}
		now := l.r.now()
		l.planResults(p, now)
		l.planFlush(p)
		p.started = l.markStarted && p.flushed > 0
		var err error
		if _, err = l.commit(now, p); err == nil && l.walErrs == 0 {
			continue
		}
		if time.Now().Add(shutdownRetry).After(deadline) {
			return fmt.Errorf("flush to the WAL before the shutdown timeout: %d buffered events not written (they are read again at the next start): %s",
				len(l.buf), l.r.Snapshot().LastError)
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
