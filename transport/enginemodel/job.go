package enginemodel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultDrainRate is the sink's default pace in rows per second: the
// ceiling the real engine reached with 200-byte RAW rows and a queue of
// 8192, so a model job is no faster a peer than the engine.
const DefaultDrainRate = 47000

// JobConfig configures a simulated job. Zero values take the defaults.
type JobConfig struct {
	Source SourceConfig
	// DrainRate is how many rows per second the sink takes from the
	// queue (each row costs 1/DrainRate of model time). Default
	// DefaultDrainRate.
	DrainRate float64
	// CheckpointInterval between checkpoints in Advance; 0 disables
	// checkpointing: nothing is ever committed, and rows stay in the open
	// transaction.
	CheckpointInterval time.Duration
	// AbortEvery aborts every AbortEvery-th checkpoint (0: none).
	AbortEvery int
	// FailoverEvery restores the last completed checkpoint every so much
	// model time in Advance (0: never).
	FailoverEvery time.Duration
	// RestartFreshEvery restarts the job without state every so much
	// model time in Advance (0: never).
	RestartFreshEvery time.Duration
	// Output, when set, receives each completed checkpoint's rows, in
	// emission order, before the source learns of the completion. It runs
	// under the job's lock and must not call the job. When nil, the job
	// keeps committed rows in memory for Committed.
	Output func(rows []Committed)
}

// Committed is one row of committed output.
type Committed struct {
	Checkpoint int64 `json:"checkpoint"`
	Record
}

// JobStats are a job's figures so far.
type JobStats struct {
	Emitted       int64 // rows taken from the queue by the sink
	Committed     int64 // rows made durable by completed checkpoints
	Checkpoints   int64 // completed
	Aborted       int64
	Failovers     int64
	FreshRestarts int64
	// LostOpenTx counts rows emitted but uncommitted when a failover or
	// fresh restart discarded the open transaction.
	LostOpenTx int64
	// LostQueued counts records queued at a failover or fresh restart;
	// a failover offers the snapshot's queued records again.
	LostQueued int64
}

// Job simulates a SeaTunnel job of one EdgeSocket source feeding a
// two-phase committed sink. Rows the sink emitted since the last
// completed checkpoint sit in an open transaction and become output only
// when a checkpoint completes. It is safe for concurrent use.
type Job struct {
	cfg JobConfig
	src *Source

	mu        sync.Mutex
	open      []Record
	committed []Committed
	cpSeq     int64
	last      *State // snapshot of the last completed checkpoint
	stats     JobStats
	credit    float64 // rows the sink may still take, fractional
	sinceCP   time.Duration
	sinceFail time.Duration
	sinceNew  time.Duration
}

// NewJob starts a job with an empty source.
func NewJob(cfg JobConfig) (*Job, error) {
	if cfg.DrainRate == 0 {
		cfg.DrainRate = DefaultDrainRate
	}
	var errs []error
	if cfg.DrainRate < 0 {
		errs = append(errs, fmt.Errorf("drain rate %v rows/s: must be > 0", cfg.DrainRate))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"checkpoint interval", cfg.CheckpointInterval}, {"failover interval", cfg.FailoverEvery}, {"fresh restart interval", cfg.RestartFreshEvery}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v: must not be negative", d.name, d.v))
		}
	}
	if cfg.AbortEvery < 0 {
		errs = append(errs, fmt.Errorf("abort every %d: must not be negative", cfg.AbortEvery))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("engine model job: %w", err)
	}
	src, err := NewSource(cfg.Source)
	if err != nil {
		return nil, fmt.Errorf("engine model job: %w", err)
	}
	return &Job{cfg: cfg, src: src}, nil
}

// Source is the job's EdgeSocket source.
func (j *Job) Source() *Source { return j.src }

// Drain lets the sink take up to n rows now, ignoring the drain rate;
// it returns how many it took.
func (j *Job) Drain(n int) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.drainLocked(n)
}

func (j *Job) drainLocked(n int) int {
	taken := 0
	for taken < n {
		r, ok := j.src.Poll()
		if !ok {
			break
		}
		j.open = append(j.open, r)
		taken++
	}
	j.stats.Emitted += int64(taken)
	return taken
}

// Checkpoint runs one checkpoint now: the source's snapshot, then
// completion (or abort, per AbortEvery), which commits the open
// transaction. It returns the checkpoint id and whether it completed.
func (j *Job) Checkpoint() (id int64, completed bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.checkpointLocked()
}

func (j *Job) checkpointLocked() (int64, bool) {
	j.cpSeq++
	cp := j.cpSeq
	st := j.src.Snapshot(cp)
	if j.cfg.AbortEvery > 0 && cp%int64(j.cfg.AbortEvery) == 0 {
		// The open transaction carries over to the next checkpoint.
		j.src.CheckpointAborted(cp)
		j.stats.Aborted++
		return cp, false
	}
	if len(j.open) > 0 {
		rows := make([]Committed, len(j.open))
		for i, r := range j.open {
			rows[i] = Committed{Checkpoint: cp, Record: r}
		}
		if j.cfg.Output != nil {
			j.cfg.Output(rows)
		} else {
			j.committed = append(j.committed, rows...)
		}
		j.stats.Committed += int64(len(rows))
		j.open = nil
	}
	j.last = &st
	j.stats.Checkpoints++
	j.src.CheckpointComplete(cp)
	return cp, true
}

// Failover restarts the job from its last completed checkpoint: the
// open transaction and the queue vanish, the source is restored from the
// checkpoint's snapshot (its queued records offered again) and the
// current collector's connection dies with the old reader. With no
// completed checkpoint the job starts with no state.
func (j *Job) Failover() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failoverLocked()
}

func (j *Job) failoverLocked() error {
	j.discardLocked()
	j.stats.Failovers++
	if j.last == nil {
		j.src.Reset()
		return nil
	}
	if err := j.src.Restore(*j.last); err != nil {
		return fmt.Errorf("failover to the last checkpoint: %w", err)
	}
	return nil
}

// RestartFresh is a kill -9 followed by a new job with no restore: the
// source is empty and the open transaction is lost.
func (j *Job) RestartFresh() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.restartFreshLocked()
}

func (j *Job) restartFreshLocked() {
	j.discardLocked()
	j.stats.FreshRestarts++
	j.last = nil
	j.src.Reset()
}

func (j *Job) discardLocked() {
	j.stats.LostOpenTx += int64(len(j.open))
	j.stats.LostQueued += int64(j.src.Figures().Queued)
	j.open = nil
	j.credit = 0
}

// Advance lets d of model time pass: the sink drains at DrainRate, and
// checkpoints, failovers and fresh restarts fall due at their intervals
// (measured from the job's start), in time order. A failover error
// (a snapshot the queue cannot take back) is returned.
func (j *Job) Advance(d time.Duration) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for d > 0 {
		step := d
		step = j.untilDue(step, j.cfg.CheckpointInterval, j.sinceCP)
		step = j.untilDue(step, j.cfg.FailoverEvery, j.sinceFail)
		step = j.untilDue(step, j.cfg.RestartFreshEvery, j.sinceNew)
		j.credit += j.cfg.DrainRate * step.Seconds()
		n := int(j.credit)
		j.drainLocked(n)
		j.credit -= float64(n)
		d -= step
		j.sinceCP += step
		j.sinceFail += step
		j.sinceNew += step
		if j.cfg.CheckpointInterval > 0 && j.sinceCP >= j.cfg.CheckpointInterval {
			j.sinceCP = 0
			j.checkpointLocked()
		}
		if j.cfg.FailoverEvery > 0 && j.sinceFail >= j.cfg.FailoverEvery {
			j.sinceFail = 0
			if err := j.failoverLocked(); err != nil {
				return err
			}
		}
		if j.cfg.RestartFreshEvery > 0 && j.sinceNew >= j.cfg.RestartFreshEvery {
			j.sinceNew = 0
			j.restartFreshLocked()
		}
	}
	return nil
}

// untilDue shortens step so it ends when an event of the given interval
// falls due.
func (j *Job) untilDue(step, interval, since time.Duration) time.Duration {
	if interval <= 0 {
		return step
	}
	return min(step, interval-since)
}

// Run advances the job by the time between successive ticks until ctx
// ends or ticks closes: the real-time runner a server uses with a
// time.Ticker's channel. It returns the first failover error.
func (j *Job) Run(ctx context.Context, start time.Time, ticks <-chan time.Time) error {
	last := start
	for {
		select {
		case <-ctx.Done():
			return nil
		case now, ok := <-ticks:
			if !ok {
				return nil
			}
			if d := now.Sub(last); d > 0 {
				if err := j.Advance(d); err != nil {
					return err
				}
				last = now
			}
		}
	}
}

// Committed returns the committed rows in commit order (only kept when
// JobConfig.Output is nil).
func (j *Job) Committed() []Committed {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Committed(nil), j.committed...)
}

// OpenTransaction returns the rows emitted but not yet committed.
func (j *Job) OpenTransaction() []Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Record(nil), j.open...)
}

// Stats returns the job's figures so far.
func (j *Job) Stats() JobStats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats
}
