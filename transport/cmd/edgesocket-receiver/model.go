package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// modelTick is how often the real-time runner advances the job: the
// granularity of the sink's pace and of checkpoint times.
const modelTick = 10 * time.Millisecond

// replyCounts counts the model's replies the summary reports. Sessions
// write it while the main goroutine reads it.
type replyCounts struct {
	queueFull                         atomic.Int64
	ack, pending, retry, resend, more atomic.Int64
}

func (c *replyCounts) observe(kind protocol.Kind, reply string) {
	switch kind {
	case protocol.KindBatch:
		if strings.HasPrefix(reply, protocol.QueueFullPrefix) {
			c.queueFull.Add(1)
		}
	case protocol.KindCommit:
		switch protocol.ParseReply([]byte(reply)).Code {
		case protocol.CodeACK:
			c.ack.Add(1)
		case protocol.CodePending:
			c.pending.Add(1)
		case protocol.CodeRetry:
			c.retry.Add(1)
		case protocol.CodeResend:
			c.resend.Add(1)
		default:
			c.more.Add(1)
		}
	}
}

func (m *modelOptions) jobConfig(output func([]enginemodel.Committed)) enginemodel.JobConfig {
	return enginemodel.JobConfig{
		Source: enginemodel.SourceConfig{
			QueueCapacity:         m.queueCapacity,
			QueueRatio:            m.queueRatio,
			QueueFullRetryAfterMs: m.queueFullMs,
		},
		DrainRate:          m.drainRate,
		CheckpointInterval: m.checkpointInterval,
		AbortEvery:         m.abortEvery,
		FailoverEvery:      m.failoverEvery,
		RestartFreshEvery:  m.restartFreshEvery,
		Output:             output,
	}
}

// runModel is run in engine-model mode: the model's server in real time,
// committed rows to sk.
func runModel(ctx context.Context, o *options, sk *sink, clock *modelClock, log *slog.Logger, stderr io.Writer) int {
	m := &o.model
	job, err := enginemodel.NewJob(m.jobConfig(func(rows []enginemodel.Committed) {
		for _, r := range rows {
			sk.take(r.BatchID, r.Payload)
		}
	}))
	if err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: %v\n", err)
		return exitUsage
	}
	cfg, err := o.standinConfig(log) // the decoder, as the stand-in builds it
	if err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: %v\n", err)
		return exitUsage
	}
	var counts replyCounts
	srv, err := enginemodel.NewServer(job.Source(), enginemodel.ServerConfig{
		Addr:          o.listen,
		AcceptTimeout: m.acceptTimeout,
		Logger:        log,
		Session: enginemodel.SessionConfig{
			Token:   o.token,
			Decoder: cfg.Decoder,
			Observe: func(kind protocol.Kind, id int64, reply string) {
				counts.observe(kind, reply)
				if m.logCommits && kind == protocol.KindCommit {
					log.Info("commit", slog.Int64("batch_id", id), slog.String("reply", reply))
				}
			},
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: %v\n", err)
		return exitUsage
	}
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: %v\n", err)
		return exitError
	}
	if code := announce(stderr, o, srv, "engine model listening"); code != exitOK {
		return code
	}

	runCtx, stopRun := context.WithCancel(ctx)
	if clock == nil {
		ticker := time.NewTicker(modelTick)
		defer ticker.Stop()
		clock = &modelClock{start: time.Now(), ticks: ticker.C}
	}
	// runErr is written before runDone closes and read only after.
	var runErr error
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		runErr = job.Run(runCtx, clock.start, clock.ticks)
	}()

	code := modelUntilDone(ctx, o, job, sk, &counts, runDone, &runErr, stderr)
	stopRun()
	<-runDone
	if runErr != nil {
		log.Error("engine model job failed", slog.Any("error", runErr))
		code = exitError
	}
	_ = srv.Close()
	if err := sk.flush(); err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: write output: %v\n", err)
		code = exitError
	}
	records, unique, dups := sk.counts()
	fmt.Fprintf(stderr, "edgesocket-receiver: done records=%d unique_batch_ids=%d duplicate_batch_ids=%d %s\n",
		records, unique, dups, modelFigures(job.Stats(), &counts))
	return code
}

// modelFigures formats the model's part of the stats and summary lines.
func modelFigures(st enginemodel.JobStats, c *replyCounts) string {
	return fmt.Sprintf("committed=%d checkpoints=%d aborted_checkpoints=%d failovers=%d fresh_restarts=%d lost_open_tx=%d lost_queued=%d queue_full=%d commit_ack=%d commit_pending=%d commit_retry=%d commit_resend=%d",
		st.Committed, st.Checkpoints, st.Aborted, st.Failovers, st.FreshRestarts, st.LostOpenTx, st.LostQueued,
		c.queueFull.Load(), c.ack.Load(), c.pending.Load(), c.retry.Load(), c.resend.Load())
}

// modelUntilDone flushes output and prints changed figures until a
// signal or a job failure (*runErr, once runDone is closed).
func modelUntilDone(ctx context.Context, o *options, job *enginemodel.Job, sk *sink, counts *replyCounts, runDone <-chan struct{}, runErr *error, stderr io.Writer) int {
	flush := time.NewTicker(flushInterval)
	defer flush.Stop()
	var statsC <-chan time.Time
	if o.statsInterval > 0 {
		t := time.NewTicker(o.statsInterval)
		defer t.Stop()
		statsC = t.C
	}
	var last string
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case <-runDone:
			if *runErr != nil {
				return exitError
			}
			runDone = nil // the clock stopped: the job stands still
		case <-flush.C:
			if err := sk.flush(); err != nil {
				fmt.Fprintf(stderr, "edgesocket-receiver: write output: %v\n", err)
				return exitError
			}
		case <-statsC:
			// Unchanged figures are skipped, as in the stand-in's stats.
			f := job.Source().Figures()
			line := fmt.Sprintf("queued=%d last_received=%d watermark=%d %s", f.Queued, f.LastReceived, f.LastCommitted, modelFigures(job.Stats(), counts))
			if line != last {
				fmt.Fprintf(stderr, "edgesocket-receiver: engine model %s\n", line)
				last = line
			}
		}
	}
}
