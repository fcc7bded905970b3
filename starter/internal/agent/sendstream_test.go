package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// streamSender is a linkSender that also streams: each Stream call takes
// the first segment, then waits (on the synctest clock) for want
// segments in all, answering none before the last is taken, as a long
// link answers a round trip later; then it does them all, Received, or
// with fail when set.
type streamSender struct {
	linkSender
	want int
	fail error

	streams  int   // Stream calls
	segments []int // batches per segment taken, over every call
	payloads []string
}

func (l *streamSender) Stream(_ context.Context, feed client.Feed) error {
	l.mu.Lock()
	l.streams++
	l.mu.Unlock()
	var taken [][]transport.Batch
	for range 1000 { // bounded: 1 s of the synctest clock
		if b := feed.Next(); b != nil {
			taken = append(taken, b)
			l.mu.Lock()
			l.segments = append(l.segments, len(b))
			for _, x := range b {
				l.payloads = append(l.payloads, string(x.Payload))
			}
			l.mu.Unlock()
			if len(taken) == l.want {
				break
			}
			continue
		}
		time.Sleep(time.Millisecond)
	}
	for _, b := range taken {
		out := make([]transport.Result, len(b))
		for i, x := range b {
			out[i] = transport.Result{ID: x.ID, Outcome: transport.Received}
			if l.fail != nil {
				out[i] = transport.Result{ID: x.ID, Outcome: transport.NotSent, Err: l.fail}
			}
		}
		feed.Done(out, l.fail)
	}
	return l.fail
}

// runSender runs s over jobs queued one by one, gap apart, and returns
// the results in the order the loop got them.
func runSender(t *testing.T, s *sendLoop, queued []*job, gap time.Duration) []*jobResult {
	t.Helper()
	jobs, results := make(chan *job, maxJobs), make(chan *jobResult, maxJobs)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { s.run(ctx, jobs, results) })
	for _, j := range queued {
		jobs <- j
		time.Sleep(gap)
	}
	var got []*jobResult
	for range queued {
		got = append(got, <-results)
	}
	cancel()
	wg.Wait()
	return got
}

// checkResults checks that each job got its own results, in order, every
// row with outcome want.
func checkResults(t *testing.T, got []*jobResult, queued []*job, want transport.Outcome) {
	t.Helper()
	for i, res := range got {
		if res.job != queued[i] {
			t.Fatalf("result %d is for job %d, want job %d", i, res.job.seq, queued[i].seq)
		}
		if len(res.results) != len(queued[i].rows) {
			t.Fatalf("job %d: %d results for %d rows", queued[i].seq, len(res.results), len(queued[i].rows))
		}
		for k, r := range res.results {
			if r.ID != queued[i].rows[k].BatchID || r.Outcome != want {
				t.Fatalf("job %d row %d: result %+v, want batch %d %v", queued[i].seq, k, r, queued[i].rows[k].BatchID, want)
			}
		}
	}
}

// On a long link, a job the loop hands over while the one before is still
// out goes into the same streaming call (not a Send after the first one's
// replies), encoded, and each job gets its own results back. The clock is
// synctest's.
func TestSenderStreamsJobsOnALongLink(t *testing.T) {
	for _, tt := range []struct {
		name  string
		bound int
		rtt   time.Duration
	}{
		{"bound past the floor", client.LinkFloor + 1, time.Millisecond},
		{"round trip long enough", client.LinkFloor, streamRoundTrip},
	} {
		for _, enc := range []encoder{rawEncoder{}, tagEncoder{}} {
			t.Run(fmt.Sprintf("%s/%T", tt.name, enc), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					snd := &streamSender{linkSender: linkSender{bound: tt.bound, rtt: tt.rtt}, want: 3}
					queued := []*job{pipelineJob(1, 100), pipelineJob(2, 100), pipelineJob(3, 100)}
					got := runSender(t, pipelineSendLoop(snd, enc, 2), queued, 10*time.Millisecond)
					checkResults(t, got, queued, transport.Received)
					if snd.streams != 1 || !slices.Equal(snd.segments, []int{100, 100, 100}) || len(snd.sizes) != 0 {
						t.Fatalf("%d streams of segments %v and Sends of %v, want one stream of three jobs", snd.streams, snd.segments, snd.sizes)
					}
					if _, tagged := enc.(tagEncoder); tagged && snd.payloads[150] != "job2-row50#" {
						t.Fatalf("payload %q sent, want the encoded %q", snd.payloads[150], "job2-row50#")
					}
				})
			})
		}
	}
}

// A short link, CHECKPOINT delivery and a rate cap keep one Send per call.
func TestSenderSendsWithoutStreaming(t *testing.T) {
	for _, tt := range []struct {
		name  string
		bound int
		rtt   time.Duration
		setup func(s *sendLoop)
	}{
		{"short link", client.LinkFloor, streamRoundTrip - time.Microsecond, nil},
		{"checkpoint delivery", 4 * client.LinkFloor, time.Second, func(s *sendLoop) { s.inOrder = true }},
		{"rate cap", 4 * client.LinkFloor, time.Second, func(s *sendLoop) {
			s.rate = newSendCap(output.RateLimit{EventsPerSecond: 1e9}, time.Now())
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				snd := &streamSender{linkSender: linkSender{bound: tt.bound, rtt: tt.rtt}, want: 2}
				s := pipelineSendLoop(snd, rawEncoder{}, 1)
				if tt.setup != nil {
					tt.setup(s)
				}
				queued := []*job{pipelineJob(1, 100), pipelineJob(2, 100)}
				got := runSender(t, s, queued, time.Second)
				checkResults(t, got, queued, transport.Received)
				if snd.streams != 0 || len(snd.sizes) != 2 {
					t.Fatalf("%d streams and Sends of %v, want two Sends", snd.streams, snd.sizes)
				}
			})
		})
	}
}

// A stream that stops early gives every job its error and the pause of
// one failed call: the connection backoff grows once, not once per job.
func TestSenderStreamFailurePausesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := fmt.Errorf("engine gone: %w", transport.ErrUnavailable)
		snd := &streamSender{linkSender: linkSender{bound: 4 * client.LinkFloor, rtt: time.Second}, want: 3, fail: down}
		s := pipelineSendLoop(snd, rawEncoder{}, 1)
		queued := []*job{pipelineJob(1, 10), pipelineJob(2, 10), pipelineJob(3, 10)}
		got := runSender(t, s, queued, time.Millisecond)
		checkResults(t, got, queued, transport.NotSent)
		if s.streak != 1 {
			t.Fatalf("backoff streak %d after one failed stream, want 1", s.streak)
		}
		for i, res := range got {
			if !errors.Is(res.err, transport.ErrUnavailable) || !res.retryAt.Equal(got[0].retryAt) || res.retryAt.IsZero() {
				t.Fatalf("job %d: err %v retryAt %v, want the stream's error and the first job's pause %v", i+1, res.err, res.retryAt, got[0].retryAt)
			}
		}
	})
}

// A stream lets go of a PACKET job's stored payloads once encoded (its
// wire copies are what it sends), and keeps them for RAW, whose batches
// are those payloads, and while the sent-stage tap publishes them.
func TestSenderStreamReleasesEncodedPayloads(t *testing.T) {
	for _, tt := range []struct {
		name     string
		enc      encoder
		tap      bool
		released bool
	}{
		{"packet", tagEncoder{}, false, true},
		{"packet with the tap on", tagEncoder{}, true, false},
		{"raw", rawEncoder{}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				snd := &streamSender{linkSender: linkSender{bound: 4 * client.LinkFloor, rtt: time.Second}, want: 2}
				s := pipelineSendLoop(snd, tt.enc, 2)
				s.tapOn = func() bool { return tt.tap }
				queued := []*job{pipelineJob(1, 100), pipelineJob(2, 100)}
				got := runSender(t, s, queued, time.Millisecond)
				checkResults(t, got, queued, transport.Received)
				for _, j := range queued {
					for _, r := range j.rows {
						if (r.Payload == nil) != tt.released {
							t.Fatalf("job %d row %d: payload %q, released %v", j.seq, r.ID, r.Payload, tt.released)
						}
					}
				}
				if _, tagged := tt.enc.(tagEncoder); tagged && snd.payloads[150] != "job2-row50#" {
					t.Fatalf("payload %q sent, want the encoded %q", snd.payloads[150], "job2-row50#")
				}
			})
		})
	}
}

// wakeSender counts the loop's announcements of jobs handed over.
type wakeSender struct {
	*fakeSender
	wakes atomic.Int64
}

func (w *wakeSender) Wake() { w.wakes.Add(1) }

// The loop announces the jobs it hands over (Wake), so that a streaming
// call takes them at once instead of at its next look at its feed.
func TestLoopAnnouncesJobsHandedOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		in := &fakeInput{}
		snd := &wakeSender{fakeSender: newFakeSender(nil)}
		opts := newOptions(t, cfg, t.TempDir(), in, snd)
		in.push(lineEvents("a.log", 0, 50)...)
		h := startRuntime(t, opts)
		transporttest.Eventually(t, 10*time.Second, "every row delivered", func() bool { return h.rt.Snapshot().Acked == 50 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		snd.mu.Lock()
		calls := snd.calls
		snd.mu.Unlock()
		if n := snd.wakes.Load(); n == 0 || n > int64(calls) {
			t.Fatalf("%d announcements for %d Send calls, want one per hand-over (at least one, at most one per call)", n, calls)
		}
	})
}
