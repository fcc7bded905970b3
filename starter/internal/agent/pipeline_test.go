package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

var errOverwritten = errors.New("payload overwritten while in Send")

// countingEncoder is tagEncoder that counts the payloads it has encoded.
type countingEncoder struct {
	tagEncoder
	n atomic.Int64
}

func (e *countingEncoder) Encode(dst, raw []byte) ([]byte, error) {
	out, err := e.tagEncoder.Encode(dst, raw)
	if err == nil {
		e.n.Add(1)
	}
	return out, err
}

// stepSender is a transport.Sender whose every Send runs onSend (in the
// sender goroutine, inside the Send) and records the batches in wire order.
type stepSender struct {
	calls  int
	wire   []int64 // batch ids, in the order Send was handed them
	onSend func(call int, batches []transport.Batch) error
}

func (s *stepSender) Send(_ context.Context, batches []transport.Batch) ([]transport.Result, error) {
	s.calls++
	out := make([]transport.Result, len(batches))
	for i, b := range batches {
		out[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent}
	}
	if s.onSend != nil {
		if err := s.onSend(s.calls, batches); err != nil {
			return out, err
		}
	}
	for i, b := range batches {
		s.wire = append(s.wire, b.ID)
		out[i].Outcome = transport.Received
	}
	return out, nil
}

func (s *stepSender) Close() error { return nil }

func pipelineSendLoop(snd transport.Sender, enc encoder, workers int) *sendLoop {
	return &sendLoop{
		snd: snd, enc: enc, logger: slog.New(slog.DiscardHandler), now: time.Now,
		retryWait: backoff.Policy{Initial: time.Second, Max: time.Second}, rejectWait: backoff.Policy{Max: time.Second},
		ctr: &counters{}, pub: &published{}, encodeWorkers: workers,
	}
}

// pipelineJob is job number n (from 1) of rows rows, batch ids following
// on from the jobs before it.
func pipelineJob(n, rows int) *job {
	j := &job{seq: uint64(n)}
	for i := range rows {
		id := (n-1)*rows + i + 1
		j.rows = append(j.rows, row{ID: uint64(id), BatchID: int64(id), Payload: fmt.Appendf(nil, "job%d-row%d", n, i)})
	}
	return j
}

// While a job is in Send, the next job handed over is already encoded
// (the wire does not wait for it), into other arenas than the ones the
// Send is reading; batch ids still reach the wire in order, and stopping
// the sender leaves no goroutine behind (synctest fails on a leak).
func TestSenderEncodesNextJobDuringSend(t *testing.T) {
	for _, tt := range []struct {
		name          string
		rows, workers int
	}{
		{"one part", 10, 2},
		{"parts on two cores", 300, 2},
		{"parts on four", 1024, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const jobsN = maxJobs + 2 // the loop refills the jobs the sender hands back
				enc := &countingEncoder{}
				snd := &stepSender{}
				snd.onSend = func(call int, batches []transport.Batch) error {
					// Let every other goroutine of the bubble run until it blocks: an
					// encoder working ahead has then finished the next job.
					synctest.Wait()
					want := int64(call * tt.rows)
					if call < jobsN {
						want += int64(tt.rows) // the next job, encoded ahead
					}
					if got := enc.n.Load(); got != want {
						t.Errorf("Send %d: %d payloads encoded, want %d (the next job encoded during this Send)", call, got, want)
					}
					for _, b := range batches {
						// The arenas of the job on the wire must survive the next
						// job's encoding: the client may still resend any of them.
						j, i := (b.ID-1)/int64(tt.rows)+1, (b.ID-1)%int64(tt.rows)
						if want := fmt.Sprintf("job%d-row%d#", j, i); string(b.Payload) != want {
							t.Errorf("Send %d: batch %d carries %q, want %q (overwritten while in Send)", call, b.ID, b.Payload, want)
							return errOverwritten
						}
					}
					return nil
				}
				s := pipelineSendLoop(snd, enc, tt.workers)
				jobs, results, stop := runSendLoop(t, s)
				next := 1
				for ; next <= maxJobs; next++ {
					jobs <- pipelineJob(next, tt.rows)
				}
				for n := 1; n <= jobsN; n++ {
					res := <-results
					if res.job.seq != uint64(n) || res.skipped || res.err != nil {
						t.Fatalf("result %d: job %d skipped %v err %v", n, res.job.seq, res.skipped, res.err)
					}
					for i, r := range res.results {
						if r.Outcome != transport.Received || r.ID != res.job.rows[i].BatchID {
							t.Fatalf("job %d row %d: %+v", n, i, r)
						}
					}
					if next <= jobsN {
						jobs <- pipelineJob(next, tt.rows)
						next++
					}
				}
				stop()
				want := make([]int64, jobsN*tt.rows)
				for i := range want {
					want[i] = int64(i + 1)
				}
				if !slices.Equal(snd.wire, want) {
					t.Fatalf("batch ids on the wire out of order or missing: %d ids, first %v", len(snd.wire), snd.wire[:min(8, len(snd.wire))])
				}
			})
		})
	}
}

// A job taken and encoded ahead while another was in Send is not sent
// when sending must not go on: the engine was found unreachable (the
// held-back path) or the loop takes queued jobs back to stop. It comes
// back skipped, every row NotSent, and is never on the wire.
func TestSenderHandsBackJobEncodedAhead(t *testing.T) {
	errDown := fmt.Errorf("engine: %w", transport.ErrUnavailable)
	for _, tt := range []struct {
		name     string
		sendErr  error // what the first Send returns
		handBack bool  // the loop takes its queued jobs back during the first Send
		wantErr  error // the second job's err
	}{
		{"engine unreachable", errDown, false, transport.ErrUnavailable},
		{"stopping", nil, true, transport.ErrClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				enc := &countingEncoder{}
				snd := &stepSender{}
				var s *sendLoop
				snd.onSend = func(call int, _ []transport.Batch) error {
					synctest.Wait() // the second job is taken and encoded by now
					if call == 1 && tt.handBack {
						s.handBack()
					}
					if call == 1 {
						return tt.sendErr
					}
					return nil
				}
				s = pipelineSendLoop(snd, enc, 2)
				jobs, results, stop := runSendLoop(t, s)
				jobs <- pipelineJob(1, 100)
				jobs <- pipelineJob(2, 100)
				first, second := <-results, <-results
				stop()
				if first.job.seq != 1 || first.skipped || !errors.Is(first.err, tt.sendErr) {
					t.Fatalf("first job: seq %d skipped %v err %v", first.job.seq, first.skipped, first.err)
				}
				if second.job.seq != 2 || !second.skipped || !errors.Is(second.err, tt.wantErr) {
					t.Fatalf("second job: seq %d skipped %v err %v, want skipped with %v", second.job.seq, second.skipped, second.err, tt.wantErr)
				}
				for i, r := range second.results {
					if r.Outcome != transport.NotSent || r.ID != second.job.rows[i].BatchID {
						t.Fatalf("second job row %d: %+v, want NotSent", i, r)
					}
				}
				if snd.calls != 1 {
					t.Fatalf("Send called %d times, want once (the second job must not reach the wire)", snd.calls)
				}
			})
		})
	}
}

// runSendLoop runs s on its own goroutine over new job and result
// channels; stop cancels it and waits for it to return.
func runSendLoop(t *testing.T, s *sendLoop) (chan *job, chan *jobResult, func()) {
	jobs, results := make(chan *job, maxJobs), make(chan *jobResult, maxJobs)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx, jobs, results)
	}()
	return jobs, results, func() {
		cancel()
		<-done
	}
}
