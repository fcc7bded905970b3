package agent

import (
	"context"
	"fmt"

	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
)

// linkSender answers every batch Received and reports a fixed link bound,
// as the EdgeSocket client does once it has measured the link.
type linkSender struct {
	bound int
	rtt   time.Duration
	mu    sync.Mutex
	sizes []int // batches per Send call
}

func (l *linkSender) Send(_ context.Context, batches []transport.Batch) ([]transport.Result, error) {
	l.mu.Lock()
	l.sizes = append(l.sizes, len(batches))
	l.mu.Unlock()
	out := make([]transport.Result, len(batches))
	for i, b := range batches {
		out[i] = transport.Result{ID: b.ID, Outcome: transport.Received}
	}
	return out, nil
}

func (l *linkSender) Close() error { return nil }

func (l *linkSender) Stats() client.Stats { return client.Stats{LinkBound: l.bound, RoundTrip: l.rtt} }

// The sender joins the jobs queued behind the one it takes while their
// rows stay below the link bound, and hands each job its own results
// back, in order; a settle job is never joined and keeps its place.
func TestSenderGathersJobsForTheLink(t *testing.T) {
	settle := &job{seq: 3, settle: &settleReq{ids: []int64{1}, poll: true}}
	tests := []struct {
		name      string
		bound     int
		jobs      []*job
		wantSizes []int
	}{
		{"no bound: one job per send", 0, []*job{pipelineJob(1, 100), pipelineJob(2, 100), pipelineJob(3, 100)}, []int{100, 100, 100}},
		{"a job as big as the bound goes alone", 100, []*job{pipelineJob(1, 100), pipelineJob(2, 100)}, []int{100, 100}},
		{"joined up to the bound", 250, []*job{pipelineJob(1, 100), pipelineJob(2, 100), pipelineJob(3, 100), pipelineJob(4, 100)}, []int{300, 100}},
		{"all of them", 10000, []*job{pipelineJob(1, 100), pipelineJob(2, 100), pipelineJob(3, 100), pipelineJob(4, 100)}, []int{400}},
		{"a settle job ends the gathering", 10000, []*job{pipelineJob(1, 100), pipelineJob(2, 100), settle, pipelineJob(4, 100)}, []int{200, 100}},
	}
	for _, enc := range []encoder{rawEncoder{}, tagEncoder{}} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%T/%s", enc, tt.name), func(t *testing.T) {
				testGather(t, enc, tt.bound, tt.jobs, tt.wantSizes)
			})
		}
	}
}

// testGather queues jobs, runs the sender over them and checks each
// job's results and the sizes of the Send calls.
func testGather(t *testing.T, enc encoder, bound int, queued []*job, wantSizes []int) {
	t.Helper()
	snd := &linkSender{bound: bound}
	s := pipelineSendLoop(snd, enc, 1)
	jobs, results := make(chan *job, maxJobs), make(chan *jobResult, maxJobs)
	for _, j := range queued { // queued before the sender looks
		jobs <- j
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx, jobs, results)
	}()
	for i, want := range queued {
		res := <-results
		if res.job != want {
			t.Fatalf("result %d is for job %d, want job %d", i, res.job.seq, want.seq)
		}
		if want.settle != nil {
			continue
		}
		if len(res.results) != len(want.rows) {
			t.Fatalf("job %d: %d results for %d rows", want.seq, len(res.results), len(want.rows))
		}
		for k, r := range res.results {
			if r.ID != want.rows[k].BatchID || r.Outcome != transport.Received {
				t.Fatalf("job %d row %d: result %+v, want batch %d Received", want.seq, k, r, want.rows[k].BatchID)
			}
		}
	}
	cancel()
	<-done
	snd.mu.Lock()
	defer snd.mu.Unlock()
	if !slices.Equal(snd.sizes, wantSizes) {
		t.Fatalf("Send calls of %v batches, want %v", snd.sizes, wantSizes)
	}
}

// On a long link the sender waits for the loop's next job up to a
// quarter of the round trip before a short call, and no longer. The clock
// is synctest's.
func TestSenderWaitsAQuarterRoundTripForJobs(t *testing.T) {
	tests := []struct {
		after     time.Duration // the second job is queued this long after the first
		wantSizes []int
	}{
		{10 * time.Millisecond, []int{200}},
		{24 * time.Millisecond, []int{200}},
		{26 * time.Millisecond, []int{100, 100}},
		{time.Second, []int{100, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.after.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				snd := &linkSender{bound: 10000, rtt: 100 * time.Millisecond}
				s := pipelineSendLoop(snd, rawEncoder{}, 1)
				jobs, results := make(chan *job, maxJobs), make(chan *jobResult, maxJobs)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() {
					defer close(done)
					s.run(ctx, jobs, results)
				}()
				jobs <- pipelineJob(1, 100)
				time.Sleep(tt.after)
				jobs <- pipelineJob(2, 100)
				for i := range 2 {
					if res := <-results; res.job.seq != uint64(i+1) || len(res.results) != 100 {
						t.Fatalf("result %d: job %d with %d results, want job %d with 100", i, res.job.seq, len(res.results), i+1)
					}
				}
				cancel()
				<-done
				snd.mu.Lock()
				defer snd.mu.Unlock()
				if !slices.Equal(snd.sizes, tt.wantSizes) {
					t.Fatalf("Send calls of %v batches, want %v", snd.sizes, tt.wantSizes)
				}
			})
		})
	}
}

// Jobs grow past jobSize only when the link can keep more in flight than
// the jobs out would hold, up to maxLinkJobSize rows.
func TestJobRowsFollowTheLink(t *testing.T) {
	tests := []struct {
		bound, size, want int
	}{
		{0, 1024, 1024},
		{1024, 1024, 1024}, // a short link: as before
		{8192, 1024, 2048}, // jobs out hold twice the bound
		{32768, 1024, maxLinkJobSize},
		{65536, 1024, maxLinkJobSize},
		{8192, 4096, 4096}, // bulk-max-size asked for more already
	}
	for _, tt := range tests {
		l := &loop{jobs: jobSlots{size: tt.size}, sender: &sendLoop{snd: &linkSender{bound: tt.bound}}}
		if got := l.jobRows(); got != tt.want {
			t.Errorf("link bound %d, jobSize %d: %d rows per job, want %d", tt.bound, tt.size, got, tt.want)
		}
	}
}
