package agent

import (
	"log/slog"
	"regexp"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

var lineRe = regexp.MustCompile(`_line\\?":(\d+)`)

// deliveredLines are the _line numbers of every batch the sender saw.
func deliveredLines(t *testing.T, s *fakeSender) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for p := range s.payloads() {
		for _, m := range lineRe.FindAllStringSubmatch(p, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.Fatal(err)
			}
			out[n] = true
		}
	}
	return out
}

// An outage (the engine holds its first job and answers nothing else)
// with ~1 KiB rows and queue.max-bytes 20,000, under each queue.when-full.
// block pauses reading and, once the engine answers, delivers every row;
// drop-oldest reads everything, drops the oldest unsent groups (never the
// job in flight) and delivers exactly the rest: the rows in flight, then
// the newest ones. Counters and the one log line per episode add up.
func TestWhenFullPolicies(t *testing.T) {
	const n, maxBytes = 200, 20_000
	for _, policy := range []string{WhenFullBlock, WhenFullDropOldest} {
		t.Run(policy, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)
				cfg.Agent.BulkMaxSize = 5
				cfg.Queue.PollBatchSize = 5
				cfg.Queue.MaxBytes = maxBytes
				cfg.Queue.WhenFull = policy
				clientOptions(t, cfg).MaxInFlight = 1
				in := &fakeInput{}
				in.push(bigEvents("a.log", 0, n)...)
				snd := newFakeSender(nil)
				snd.gate = make(chan struct{})
				lines := newLineCounter()
				opts := newOptions(t, cfg, t.TempDir(), in, snd)
				opts.Logger = slog.New(lines)
				h := startRuntime(t, opts)

				if policy == WhenFullBlock {
					transporttest.Eventually(t, time.Minute, "backpressure", func() bool { return h.rt.Snapshot().Backpressure })
					time.Sleep(time.Minute)
					synctest.Wait()
					st := h.rt.Snapshot()
					if in.left() == 0 || st.Drops != (DropStatus{}) {
						t.Fatalf("block: %d events left unread, drops %+v; want reading paused, nothing dropped", in.left(), st.Drops)
					}
				} else {
					transporttest.Eventually(t, time.Minute, "all read", func() bool { return in.left() == 0 })
					synctest.Wait()
					st := h.rt.Snapshot()
					if st.Backpressure || !st.Drops.Dropping || st.Drops.FullRows == 0 || st.Drops.AgeRows != 0 {
						t.Fatalf("drop-oldest: backpressure %v, drops %+v; want reading on and rows dropped for size", st.Backpressure, st.Drops)
					}
					if hl := st.Health(time.Now(), 0); !hl.Healthy || hl.Reason != DegradedDropping {
						t.Fatalf("health %+v, want healthy and %q", hl, DegradedDropping)
					}
					if st.Queue.PayloadBytes > maxBytes {
						t.Fatalf("queue %d bytes after the drops, bound %d", st.Queue.PayloadBytes, maxBytes)
					}
				}
				close(snd.gate)
				transporttest.Eventually(t, time.Minute, "backlog delivered", func() bool {
					st := h.rt.Snapshot()
					return in.left() == 0 && st.Queue.Pending == 0 && st.Queue.Sending == 0
				})
				time.Sleep(2 * dropEpisodeMax) // the episode's log line
				synctest.Wait()
				st := h.rt.Snapshot()
				got := deliveredLines(t, snd)
				if int64(len(got))+st.Drops.FullRows != n || st.EventsRead != n {
					t.Fatalf("read %d, delivered %d + dropped %d, want %d", st.EventsRead, len(got), st.Drops.FullRows, n)
				}
				// What is missing is one run of consecutive lines: after
				// the rows in flight, before the newest.
				lo, hi := -1, -1
				for i := range n {
					if !got[i] {
						if lo < 0 {
							lo = i
						}
						hi = i
					}
				}
				for i := lo; lo >= 0 && i <= hi; i++ {
					if got[i] {
						t.Fatalf("line %d delivered inside the dropped run %d..%d", i, lo, hi)
					}
				}
				warns := lines.count("queue above queue.max-bytes with when-full: drop-oldest")
				switch policy {
				case WhenFullBlock:
					if len(got) != n || warns != 0 {
						t.Fatalf("block: %d of %d delivered, %d drop lines", len(got), n, warns)
					}
				case WhenFullDropOldest:
					if lo <= 0 || warns != 1 || st.Drops.Dropping {
						t.Fatalf("drop-oldest: dropped %d..%d, %d drop lines, dropping %v; want a middle run, one line, episode over",
							lo, hi, warns, st.Drops.Dropping)
					}
					if hi >= n-5 {
						t.Fatalf("drop-oldest: the newest rows (up to %d) were dropped", hi)
					}
				}
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// queue.max-age-ms drops the unsent rows older than it, and nothing
// younger, while the engine is down; the totals survive a restart (the WAL keeps them).
func TestMaxAgeDropsByAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Queue.MaxAge = 10 * time.Minute
		cfg.Agent.BulkMaxSize = 5
		clientOptions(t, cfg).MaxInFlight = 1
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 30)...)
		snd := newFakeSender(nil)
		snd.down = transport.ErrUnavailable
		lines := newLineCounter()
		opts := newOptions(t, cfg, home, in, snd)
		opts.Logger = slog.New(lines)
		h := startRuntime(t, opts)
		transporttest.Eventually(t, time.Minute, "first rows read", func() bool { return in.left() == 0 })
		time.Sleep(5 * time.Minute)
		in.push(lineEvents("a.log", 30, 50)...)
		transporttest.Eventually(t, time.Minute, "more rows read", func() bool { return in.left() == 0 })
		time.Sleep(6 * time.Minute) // the first 30 are past 10 minutes, the next 20 not
		synctest.Wait()
		st := h.rt.Snapshot()
		if st.Drops.AgeRows != 30 || st.Drops.FullRows != 0 {
			t.Fatalf("drops %+v, want the 30 old rows dropped for age", st.Drops)
		}
		snd.mu.Lock()
		snd.down = nil
		snd.mu.Unlock()
		transporttest.Eventually(t, time.Minute, "delivered", func() bool {
			st := h.rt.Snapshot()
			return st.Queue.Pending == 0 && st.Queue.Sending == 0
		})
		time.Sleep(2 * dropEpisodeMax)
		synctest.Wait()
		got := deliveredLines(t, snd)
		for i := range 50 {
			if got[i] != (i >= 30) {
				t.Fatalf("line %d delivered: %v; want only the 20 younger than max-age", i, got[i])
			}
		}
		if w := lines.count("dropped unsent rows older than queue.max-age-ms"); w != 1 {
			t.Fatalf("%d age drop lines, want 1", w)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		// A restart reports the same totals.
		h = startRuntime(t, newOptions(t, cfg, home, &fakeInput{}, newFakeSender(nil)))
		transporttest.Eventually(t, time.Minute, "restarted", func() bool { return h.rt.Snapshot().State == "running" })
		if again := h.rt.Snapshot().Drops; again.AgeRows != st.Drops.AgeRows || again.AgeBytes != st.Drops.AgeBytes {
			t.Fatalf("after a restart drops %+v, before %+v", again, st.Drops)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A restart while the engine is down, under drop-oldest, drops the
// oldest rows, the earlier run's, and keeps the ones read since: the
// first job after the start is a one-row probe, so the backlog is not
// held SENDING (where no drop reaches it) while the connection is tried.
func TestRestartDuringOutageDropsTheOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Commit groups of 40 rows of ~1 KiB (the job size): 2 fit.
		const maxBytes = 100_000
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Agent.BulkMaxSize = 5
		cfg.Queue.PollBatchSize = 5
		cfg.Queue.MaxBytes = maxBytes
		cfg.Queue.WhenFull = WhenFullDropOldest
		clientOptions(t, cfg).MaxInFlight = 10 // jobs of 40 rows: one takes the whole backlog
		in := &fakeInput{}
		in.push(bigEvents("a.log", 0, 200)...)
		down := newFakeSender(nil)
		down.down = transport.ErrUnavailable
		h := startRuntime(t, newOptions(t, cfg, home, in, down))
		transporttest.Eventually(t, time.Minute, "first run read", func() bool { return in.left() == 0 })
		time.Sleep(2 * max(cfg.Agent.CommitInterval, cfg.Agent.FlushInterval))
		synctest.Wait()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}

		// The engine still does not answer: every Send waits.
		in = &fakeInput{}
		in.push(bigEvents("b.log", 1000, 1200)...)
		snd := newFakeSender(nil)
		snd.gate = make(chan struct{})
		h = startRuntime(t, newOptions(t, cfg, home, in, snd))
		transporttest.Eventually(t, time.Minute, "second run read", func() bool { return in.left() == 0 })
		time.Sleep(2 * max(cfg.Agent.CommitInterval, cfg.Agent.FlushInterval)) // the last group's commit
		synctest.Wait()
		st := h.rt.Snapshot()
		if st.Queue.Sending > 1 || st.Queue.PayloadBytes > maxBytes {
			t.Fatalf("%d rows SENDING, %d bytes queued; want the one-row probe, at most %d bytes", st.Queue.Sending, st.Queue.PayloadBytes, maxBytes)
		}
		close(snd.gate)
		transporttest.Eventually(t, time.Minute, "backlog delivered", func() bool {
			st := h.rt.Snapshot()
			return st.Queue.Pending == 0 && st.Queue.Sending == 0
		})
		got := deliveredLines(t, snd)
		old := 0
		for n := range got {
			if n < 1000 {
				old++
			}
		}
		if st.Drops.FullRows == 0 {
			t.Fatalf("nothing dropped: %+v", st.Drops)
		}
		for n := 1195; n < 1200; n++ {
			if !got[n] {
				t.Fatalf("newest row %d dropped; delivered %v", n, got)
			}
		}
		if old > 1 {
			t.Fatalf("%d rows of the first run delivered, want at most the probe's; delivered %v", old, got)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A paused queue resumes a quarter below queue.max-bytes under when-full:
// block, and once within it under drop-oldest (the drops stop at the
// bound), unless only queue-drop: never rows hold it there.
func TestFullResumeLevel(t *testing.T) {
	const bound = 1000
	for _, c := range []struct {
		name     string
		whenFull string
		held     bool
		queued   int64
		paused   bool
		want     bool
	}{
		{"block over", WhenFullBlock, false, 1001, false, true},
		{"block at the bound", WhenFullBlock, false, 1000, false, false},
		{"block paused within the margin", WhenFullBlock, false, 900, true, true},
		{"block paused under the margin", WhenFullBlock, false, 750, true, false},
		{"drop-oldest over", WhenFullDropOldest, false, 1001, false, true},
		{"drop-oldest paused, dropped to the bound", WhenFullDropOldest, false, 1000, true, false},
		{"drop-oldest paused, still over", WhenFullDropOldest, false, 1001, true, true},
		{"drop-oldest held by never rows", WhenFullDropOldest, true, 900, true, true},
		{"drop-oldest held, under the margin", WhenFullDropOldest, true, 750, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := &walQueue{maxBytes: bound, whenFull: c.whenFull, dropHeld: c.held, queued: c.queued}
			if got, size := q.Full(c.paused); got != c.want || size != c.queued {
				t.Fatalf("Full(%v) = %v, %d; want %v, %d", c.paused, got, size, c.want, c.queued)
			}
		})
	}
}
