package agent

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// sentBetween counts the batches the fake engine first got in [from, to),
// and their payload bytes.
func (s *fakeSender) sentBetween(from, to time.Time) (events, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, times := range s.times {
		if t := times[0]; !t.Before(from) && t.Before(to) {
			events++
			bytes += len(s.last[id])
		}
	}
	return events, bytes
}

// firstSend is when the fake engine got its first batch.
func (s *fakeSender) firstSend() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	for _, times := range s.times {
		if first.IsZero() || times[0].Before(first) {
			first = times[0]
		}
	}
	return first
}

// within reports whether got is within tol (a fraction) of want.
func within(got, want, tol float64) bool { return got >= want*(1-tol) && got <= want*(1+tol) }

// The cap holds the rate the engine sees within 5 % over 10 s of virtual
// time (the bucket's first burst aside), for events, bytes and both, and
// drops nothing: every event is delivered once, the rest of the backlog
// waiting in the WAL until its turn. Acks keep up with the sends.
func TestRateCapHoldsTheRateAndDropsNothing(t *testing.T) {
	cases := []struct {
		name  string
		limit output.RateLimit
		// events to queue: more than 11 s of the cap, less than 20 s.
		events int
		// binding names the cap the rate meets; the other stays under.
		bindsBytes bool
	}{
		{"events", output.RateLimit{EventsPerSecond: 100}, 1500, false},
		{"bytes", output.RateLimit{BytesPerSecond: 4000}, 1500, true},
		{"both, bytes the tighter", output.RateLimit{EventsPerSecond: 100, BytesPerSecond: 2000}, 800, true},
		{"both, events the tighter", output.RateLimit{EventsPerSecond: 50, BytesPerSecond: 100_000, Burst: 10}, 800, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in := &fakeInput{}
				in.push(lineEvents("a.log", 0, tc.events)...)
				snd := newFakeSender(nil)
				opts := newOptions(t, testConfig(t), t.TempDir(), in, snd)
				opts.RateLimit = tc.limit
				h := startRuntime(t, opts)
				transporttest.Eventually(t, time.Minute, "a first send", func() bool { return h.rt.Snapshot().Sent > 0 })
				from := snd.firstSend().Add(time.Second) // past the first burst
				time.Sleep(12 * time.Second)
				events, bytes := snd.sentBetween(from, from.Add(10*time.Second))
				evRate, byteRate := float64(events)/10, float64(bytes)/10
				t.Logf("measured over 10 s: %.1f events/s, %.1f bytes/s (cap %+v)", evRate, byteRate, tc.limit)
				if l := tc.limit.EventsPerSecond; l > 0 {
					if evRate > l*1.05 || (!tc.bindsBytes && !within(evRate, l, 0.05)) {
						t.Errorf("event rate %.1f/s, cap %.1f/s", evRate, l)
					}
				}
				if l := float64(tc.limit.BytesPerSecond); l > 0 {
					if byteRate > l*1.05 || (tc.bindsBytes && !within(byteRate, l, 0.05)) {
						t.Errorf("byte rate %.1f/s, cap %.0f/s", byteRate, l)
					}
				}
				st := h.rt.Snapshot()
				if st.SendThrottled < 5*time.Second {
					t.Errorf("send throttled %v over 12 s at the cap, want most of it", st.SendThrottled)
				}
				// Jobs hold about one burst: what went out two seconds
				// ago is acked, not held SENDING for a whole paced job.
				if sent, _ := snd.sentBetween(time.Time{}, time.Now().Add(-2*time.Second)); st.Acked < uint64(sent) {
					t.Errorf("acked %d, though %d were sent more than 2 s ago", st.Acked, sent)
				}
				transporttest.Eventually(t, time.Minute, "every event acked", func() bool {
					st := h.rt.Snapshot()
					return st.Acked == uint64(tc.events) && st.Queue.Pending == 0 && st.Queue.Sending == 0
				})
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				got := snd.payloads()
				for _, p := range payloadsOf(0, tc.events) {
					if got[p] != 1 {
						t.Fatalf("payload %s delivered %d times, want once", p, got[p])
					}
				}
				if st := h.rt.Snapshot(); st.Dropped != 0 || st.Dead != 0 || st.Failed != 0 {
					t.Fatalf("dropped %d, dead %d, failed %d: want none", st.Dropped, st.Dead, st.Failed)
				}
			})
		})
	}
}

// A reload changes the cap at once, without rebuilding the output (the
// connection stays), and the status shows the cap in force.
func TestReloadChangesTheRateCapLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 2000)...)
		snd := newFakeSender(nil)
		opts := newOptions(t, testConfig(t), t.TempDir(), in, snd)
		opts.RateLimit = output.RateLimit{EventsPerSecond: 50}
		h := startRuntime(t, opts)
		transporttest.Eventually(t, time.Minute, "a first send", func() bool { return h.rt.Snapshot().Sent > 0 })
		from := snd.firstSend().Add(time.Second)
		time.Sleep(6 * time.Second)
		slow, _ := snd.sentBetween(from, from.Add(5*time.Second))

		next := opts
		next.RateLimit = output.RateLimit{EventsPerSecond: 200}
		reloadAt := time.Now()
		if err := h.rt.Reload(context.Background(), next, Replace{}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(reloadAt); took > time.Second {
			t.Errorf("the reload took %v: it waited for the rows held by the cap", took)
		}
		if got := h.rt.Snapshot().RateLimit.EventsPerSecond; got != 200 {
			t.Fatalf("status shows a cap of %v events/s after the reload, want 200", got)
		}
		from = time.Now().Add(time.Second)
		time.Sleep(6 * time.Second)
		fast, _ := snd.sentBetween(from, from.Add(5*time.Second))
		t.Logf("measured: %.1f events/s at a cap of 50, %.1f at 200", float64(slow)/5, float64(fast)/5)
		if !within(float64(slow)/5, 50, 0.05) || !within(float64(fast)/5, 200, 0.05) {
			t.Errorf("rates %.1f/s then %.1f/s, want 50 then 200", float64(slow)/5, float64(fast)/5)
		}
		snd.mu.Lock()
		closed := snd.closed
		snd.mu.Unlock()
		if closed {
			t.Error("the reload closed the output: changing the cap must keep the connection")
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// An event bigger than the byte burst is not stuck: it goes once the cap
// has paid for all its bytes, and the events after it wait for that debt.
func TestEventBiggerThanTheByteBurstStillGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &fakeInput{}
		big := lineEvent("a.log", 0)
		big.Payload = []byte(`{"payload":"` + strings.Repeat("x", 1000) + `"}`)
		in.push(big, lineEvent("a.log", 1))
		snd := newFakeSender(nil)
		opts := newOptions(t, testConfig(t), t.TempDir(), in, snd)
		opts.RateLimit = output.RateLimit{BytesPerSecond: 100, Burst: 100}
		h := startRuntime(t, opts)
		start := time.Now()
		transporttest.Eventually(t, time.Minute, "both events acked", func() bool { return h.rt.Snapshot().Acked == 2 })
		// The big one leaves at once on the full bucket, in debt for
		// what it has beyond it; the small one waits for the debt.
		if took := time.Since(start); took < time.Duration(len(big.Payload)-100)*time.Second/100 {
			t.Errorf("the second event went %v after the start, before the first one's bytes were paid for", took)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// Stopping while rows wait for the cap is not held up by it, and loses
// nothing: the rows not sent stay in the WAL for the next start.
func TestStopWhileThrottledKeepsTheBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 100)...)
		snd := newFakeSender(nil)
		cfg := testConfig(t)
		opts := newOptions(t, cfg, home, in, snd)
		opts.RateLimit = output.RateLimit{EventsPerSecond: 1}
		h := startRuntime(t, opts)
		time.Sleep(5 * time.Second)
		st := h.rt.Snapshot()
		if st.RateLimit.BacklogETA <= 0 {
			t.Errorf("backlog ETA %v at 1 event/s with %d queued", st.RateLimit.BacklogETA, st.Queue.Pending+st.Queue.Sending)
		}
		stopAt := time.Now()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(stopAt); took >= cfg.Agent.ShutdownTimeout/2 {
			t.Errorf("stop took %v: it waited for the cap", took)
		}
		acked := h.rt.Snapshot().Acked
		c := readCounts(t, home)
		if acked+uint64(c.Pending) != 100 || c.Sending != 0 {
			t.Fatalf("acked %d, WAL pending %d, sending %d: want every one of 100 acked or pending", acked, c.Pending, c.Sending)
		}
	})
}
