package agent

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

func TestFlushBySizeAndInterval(t *testing.T) {
	for _, tc := range []struct {
		name          string
		bulk          int
		flushMs       int64
		events        int
		wantBefore    uint64 // rows appended before the interval can have passed
		wantAfter     uint64 // rows appended once it has
		waitAfter     time.Duration
		shutdownTotal int
	}{
		// The first group is bulk-max-size; the input was still full, so
		// the next group is twice that, and the 15 left wait for it.
		{name: "size: a full group flushes at once, the rest waits", bulk: 10, flushMs: 3_600_000, events: 25, wantBefore: 10, wantAfter: 10, waitAfter: 50 * time.Millisecond},
		{name: "interval: a small buffer flushes after flush-interval-ms", bulk: 1000, flushMs: 150, events: 5, wantBefore: 0, wantAfter: 5, waitAfter: 400 * time.Millisecond},
		// Groups of 1, 2 and 4 while the input stays full: none waits.
		{name: "bulk 1: nothing waits for the interval", bulk: 1, flushMs: 3_600_000, events: 7, wantBefore: 7, wantAfter: 7, waitAfter: 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bubble's clock: "before the interval" and "after it" are
			// exact, whatever the machine is doing.
			synctest.Test(t, func(t *testing.T) {
				home := t.TempDir()
				cfg := testConfig(t)
				cfg.Agent.BulkMaxSize = tc.bulk
				cfg.Agent.FlushInterval = time.Duration(tc.flushMs) * time.Millisecond
				in := &fakeInput{}
				// An engine that never answers: no send result triggers a commit
				// (results would carry the rest of the buffer with them).
				snd := newFakeSender(nil)
				snd.block = true
				h := startRuntime(t, newOptions(t, cfg, home, in, snd))
				in.push(lineEvents("a.log", 0, tc.events)...)
				transporttest.Eventually(t, 5*time.Second, "input read", func() bool { return in.left() == 0 })
				if tc.wantBefore > 0 {
					transporttest.Eventually(t, 5*time.Second, "size flush", func() bool { return h.rt.Snapshot().RowsAppended >= tc.wantBefore })
				}
				synctest.Wait()
				if got := h.rt.Snapshot().RowsAppended; got != tc.wantBefore {
					t.Fatalf("rows appended right after reading = %d, want %d", got, tc.wantBefore)
				}
				time.Sleep(tc.waitAfter)
				synctest.Wait()
				if got := h.rt.Snapshot().RowsAppended; got != tc.wantAfter {
					t.Fatalf("rows appended later = %d, want %d", got, tc.wantAfter)
				}
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				if got := h.rt.Snapshot().RowsAppended; got != uint64(tc.events) {
					t.Fatalf("rows appended after shutdown = %d, want %d", got, tc.events)
				}
			})
		})
	}
}

// A refused row is sendable again after the retry backoff (not after the
// resurrect interval); rows sent with it are not charged.
func TestFailedRowIsRetriedAfterBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Retry.Backoff = 200 * time.Millisecond
		cfg.Retry.BackoffMax = 1000 * time.Millisecond
		cfg.Queue.ResurrectInterval = 3_600_000 * time.Millisecond
		cfg.Agent.BulkMaxSize = 10
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 10)...)
		var failedID int64
		snd := newFakeSender(func(b transport.Batch, n int) transport.Outcome {
			if failedID == 0 {
				failedID = b.ID + 3 // the 4th row of the first job
			}
			if b.ID == failedID && n == 0 {
				return transport.Failed
			}
			return transport.Received
		})
		h := startRuntime(t, newOptions(t, cfg, home, in, snd))
		transporttest.Eventually(t, 5*time.Second, "10 acks", func() bool { return h.rt.Snapshot().Acked == 10 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		snd.mu.Lock()
		times := snd.times[failedID]
		sends := len(snd.sends)
		total := 0
		for _, n := range snd.sends {
			total += n
		}
		snd.mu.Unlock()
		if len(times) != 2 {
			t.Fatalf("failed row sent %d times, want 2", len(times))
		}
		// Jitter shortens the 200ms backoff by at most half; the clock is the
		// bubble's, so the bounds are exact.
		if gap := times[1].Sub(times[0]); gap < 100*time.Millisecond || gap > 200*time.Millisecond {
			t.Fatalf("failed row resent after %v, want the retry backoff (~200ms)", gap)
		}
		if sends != 10 || total != 11 {
			t.Fatalf("sends: %d distinct, %d total; want 10 and 11 (only the failed row twice)", sends, total)
		}
		st := h.rt.Snapshot()
		if st.Failed != 1 || st.Retries != 1 || st.Dead != 0 {
			t.Fatalf("failed %d retries %d dead %d, want 1 1 0", st.Failed, st.Retries, st.Dead)
		}
	})
}

func TestMaxAttemptsMovesRowsToDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Retry.MaxAttempts = 3
		cfg.Retry.Backoff = 5 * time.Millisecond
		cfg.Retry.BackoffMax = 20 * time.Millisecond
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 4)...)
		snd := newFakeSender(func(transport.Batch, int) transport.Outcome { return transport.Failed })
		h := startRuntime(t, newOptions(t, cfg, home, in, snd))
		transporttest.Eventually(t, 5*time.Second, "4 dead", func() bool { return h.rt.Snapshot().Dead == 4 })
		time.Sleep(time.Minute) // DEAD rows are never sent again
		synctest.Wait()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if d, total := snd.stats(); d != 4 || total != 12 {
			t.Fatalf("sends: %d distinct, %d total; want 4 rows × 3 attempts", d, total)
		}
		if c := readCounts(t, home); c.Dead != 4 || c.Pending != 0 {
			t.Fatalf("WAL = %+v, want 4 DEAD", c)
		}
	})
}

// An unreachable engine charges nothing, pauses sending for the retry
// backoff and never stops reading.
func TestUnavailableEnginePausesSendingNotReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Retry.MaxAttempts = 2
		cfg.Retry.Backoff = 100 * time.Millisecond
		cfg.Retry.BackoffMax = 100 * time.Millisecond
		in := &fakeInput{}
		snd := newFakeSender(nil)
		snd.down = transport.ErrUnavailable
		h := startRuntime(t, newOptions(t, cfg, home, in, snd))
		for i := 0; i < 5; i++ {
			in.push(lineEvents("a.log", i*100, (i+1)*100)...)
			time.Sleep(60 * time.Millisecond)
			synctest.Wait()
		}
		transporttest.Eventually(t, 5*time.Second, "all rows appended", func() bool { return h.rt.Snapshot().RowsAppended == 500 })
		snd.mu.Lock()
		calls := snd.calls
		snd.down = nil
		snd.mu.Unlock()
		// ~300ms of outage at a 100ms pause: a handful of calls, not a storm.
		if calls < 1 || calls > 10 {
			t.Fatalf("%d Send calls during the outage, want a few", calls)
		}
		transporttest.Eventually(t, 5*time.Second, "500 acks", func() bool { return h.rt.Snapshot().Acked == 500 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		st := h.rt.Snapshot()
		if st.Dead != 0 || st.Failed != 0 || st.SendErrors == 0 {
			t.Fatalf("dead %d failed %d send errors %d; want 0 0 >0", st.Dead, st.Failed, st.SendErrors)
		}
	})
}

func TestRejectedRetriesAtMaxBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		clientOptions(t, cfg).MaxBackoff = 250 * time.Millisecond
		cfg.Retry.MaxAttempts = 1
		in := &fakeInput{}
		snd := newFakeSender(nil)
		snd.callErr = func(int) error { return errors.Join(transport.ErrRejected) }
		start := time.Now()
		h := startRuntime(t, newOptions(t, cfg, home, in, snd))
		in.push(lineEvents("a.log", 0, 100)...)
		calls := func() int {
			snd.mu.Lock()
			defer snd.mu.Unlock()
			return snd.calls
		}
		transporttest.Eventually(t, 5*time.Second, "3 attempts", func() bool { return calls() >= 3 })
		in.push(lineEvents("a.log", 100, 200)...)
		transporttest.Eventually(t, 5*time.Second, "reading goes on", func() bool { return h.rt.Snapshot().RowsAppended == 200 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		// Jitter shortens the 250ms wait to no less than 125ms (the bubble's
		// clock: the bound is exact).
		if n, most := calls(), int(time.Since(start)/(125*time.Millisecond))+1; n > most {
			t.Fatalf("%d Send calls in %v, want at most %d at a 250ms max backoff", n, time.Since(start), most)
		}
		if c := readCounts(t, home); c.Pending != 200 || c.Dead != 0 {
			t.Fatalf("WAL = %+v, want 200 PENDING, none DEAD", c)
		}
	})
}

// The group grows while the input stays full (doubling up to maxGroup,
// groupJobs jobs' rows) and shrinks back toward bulk-max-size
// once the input runs dry; a failed transaction or a reload starts it
// again at bulk-max-size.
func TestGroupFollowsLoad(t *testing.T) {
	const jobSize = 1024
	const maxGroup = groupJobs * jobSize // 4096 events by default
	for _, tc := range []struct {
		name   string
		bulk   int
		start  int
		full   bool
		nosync bool // queue.fsync: false
		want   int
	}{
		{name: "full input doubles", bulk: 256, start: 256, full: true, want: 512},
		{name: "doubles past the old 512 cap", bulk: 256, start: 512, full: true, want: 1024},
		{name: "doubles past two jobs", bulk: 256, start: 2048, full: true, want: min(4096, maxGroup)},
		{name: "capped at maxGroup", bulk: 256, start: maxGroup, full: true, want: maxGroup},
		{name: "dry input halves", bulk: 256, start: 2048, full: false, want: 1024},
		{name: "never below bulk-max-size", bulk: 256, start: 256, full: false, want: 256},
		{name: "bulk-max-size above maxGroup stays", bulk: 2 * maxGroup, start: 2 * maxGroup, full: true, want: 2 * maxGroup},
		{name: "without fsync capped at 512", bulk: 256, start: 512, full: true, nosync: true, want: 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Agent.BulkMaxSize = tc.bulk
			opts := Options{Agent: cfg.Agent}
			opts.WAL.Fsync = !tc.nosync
			g := newGrouping(opts, jobSize, true)
			if g.size != tc.bulk {
				t.Fatalf("group %d at start, want bulk-max-size %d", g.size, tc.bulk)
			}
			g.size, g.inputFull = tc.start, tc.full
			g.grow()
			if g.size != tc.want {
				t.Fatalf("group %d after a commit (input full: %v), want %d", g.size, tc.full, tc.want)
			}
			g.reset()
			if g.size != tc.bulk {
				t.Fatalf("group %d after reset, want bulk-max-size %d", g.size, tc.bulk)
			}
		})
	}
}

// A group of big events ends at defaultGroupMaxBytes of payloads, however many
// events the group would take: polling stops there (it is checked
// between polls, so a group may go over by one poll-batch-size) and the
// buffer is due.
func TestGroupEndsAtMaxGroupBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		const events = 4 * defaultGroupMaxBytes / (64 << 10) // four groups' worth of 64 KiB events
		cfg.Agent.BulkMaxSize = 4 * events
		cfg.Queue.PollBatchSize = 4
		cfg.Agent.FlushInterval = time.Hour
		in := &fakeInput{}
		big := bytes.Repeat([]byte("x"), 64<<10)
		for i := range events {
			in.push(input.Event{Payload: big, Pos: input.Position{Key: "a.log", State: fmt.Appendf(nil, "%d", i)}})
		}
		snd := newFakeSender(nil)
		snd.block = true // no send result adds commits of its own
		h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, snd))
		transporttest.Eventually(t, 5*time.Second, "input read", func() bool { return in.left() == 0 })
		synctest.Wait()
		s := h.rt.Snapshot()
		// events/4 events of 64 KiB fill a group: 4 commits for all of
		// them, where a group counted in events alone would take them in one.
		if s.RowsAppended < 3*events/4 || s.Commits < 3 {
			t.Fatalf("%d rows appended in %d commits; want groups of at most %d bytes (%d events)",
				s.RowsAppended, s.Commits, defaultGroupMaxBytes, events/4)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// Under load the WAL sees a few big transactions rather than one per
// bulk-max-size events: 3,000 waiting events with bulk-max-size 10 go in
// with groups of 10, 20, 40, ... instead of 300 commits.
func TestBacklogIsWrittenInGrowingGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Agent.BulkMaxSize = 10
		cfg.Agent.FlushInterval = time.Hour
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 3000)...)
		snd := newFakeSender(nil)
		snd.block = true // no send result adds commits of its own
		h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, snd))
		transporttest.Eventually(t, 5*time.Second, "input read", func() bool { return in.left() == 0 })
		synctest.Wait()
		s := h.rt.Snapshot()
		if s.RowsAppended < 2000 || s.Commits > 20 {
			t.Fatalf("%d rows appended in %d commits; want most of the 3000 in at most 20", s.RowsAppended, s.Commits)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// While the engine is unreachable or turns us away, each attempt is one
// row: a claimed row that comes back unsent is released, which rewrites
// it in the WAL, so full jobs at every attempt rewrote the head of the
// backlog over and over for as long as the outage lasted. Once a Send
// goes through, full jobs resume and the backlog drains.
func TestLinkDownProbesWithOneRow(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"rejected", transport.ErrRejected},
		{"unavailable", transport.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)
				clientOptions(t, cfg).MaxBackoff = 250 * time.Millisecond
				cfg.Retry.Backoff, cfg.Retry.BackoffMax = 250*time.Millisecond, 250*time.Millisecond
				in := &fakeInput{}
				snd := newFakeSender(nil)
				snd.down = tc.err
				opts := newOptions(t, cfg, t.TempDir(), in, snd)
				job := jobSize(opts)
				// More rows than the jobs out can hold, so that full jobs
				// handed out at every attempt would release more than
				// the bound below.
				backlog := uint64((maxJobs + 2) * job)
				in.push(lineEvents("a.log", 0, int(backlog))...)
				h := startRuntime(t, opts)
				calls := func() int {
					snd.mu.Lock()
					defer snd.mu.Unlock()
					return snd.calls
				}
				transporttest.Eventually(t, 10*time.Second, "backlog appended", func() bool { return h.rt.Snapshot().RowsAppended == backlog })
				transporttest.Eventually(t, 10*time.Second, "8 attempts", func() bool { return calls() >= 8 })
				synctest.Wait()
				snd.mu.Lock()
				snd.down = nil
				outage := append([]int(nil), snd.sizes...)
				snd.mu.Unlock()
				released := h.rt.Snapshot().Released
				transporttest.Eventually(t, 10*time.Second, "backlog delivered", func() bool { return h.rt.Snapshot().Acked == backlog })
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				// Until the first failure comes back, the loop may have
				// claimed up to maxJobs full jobs (how many depends on how
				// the goroutines ran); every later attempt a single row.
				if most := uint64(maxJobs*job + len(outage)); released > most {
					t.Errorf("%d rows released over %d attempts (sizes %v); want at most %d (%d jobs of %d, then one row per attempt)",
						released, len(outage), outage, most, maxJobs, job)
				}
				for i, n := range outage[1:] {
					if n != probeRows {
						t.Errorf("attempt %d during the outage carried %d rows, want %d (sizes %v)", i+2, n, probeRows, outage)
						break
					}
				}
				snd.mu.Lock()
				after := snd.sizes[len(outage):]
				snd.mu.Unlock()
				if len(after) < 2 || after[0] != probeRows || after[1] != job {
					t.Fatalf("sends after the link came back: %v, want one probe row then full jobs of %d", after, job)
				}
			})
		})
	}
}

// While one job is in Send, up to two groups' worth wait behind it
// (maxJobs in all): the sender takes the next job as soon as a Send returns,
// instead of waiting for the loop's next transaction (which also appends
// a group and fsyncs).
func TestJobsWaitBehindTheOneInSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		// Groups of whole jobs, so that each claim finds a job's rows.
		cfg.Queue.Fsync, cfg.Agent.BulkMaxSize = true, 1024
		in := &fakeInput{}
		snd := newFakeSender(nil)
		snd.gate = make(chan struct{})
		snd.started = make(chan struct{}, 1)
		opts := newOptions(t, cfg, t.TempDir(), in, snd)
		job := jobSize(opts)
		backlog := 10 * job
		in.push(lineEvents("a.log", 0, backlog)...)
		h := startRuntime(t, opts)
		<-snd.started
		transporttest.Eventually(t, 10*time.Second, "backlog appended", func() bool { return h.rt.Snapshot().RowsAppended == uint64(backlog) })
		// Claims ride on the transactions appends make; once the input
		// is dry, the loop looks for queued rows every claimRecheckInterval.
		time.Sleep(2 * claimRecheckInterval)
		synctest.Wait()
		if got, want := h.rt.Snapshot().Queue.Sending, int64(maxJobs*job); got != want {
			t.Errorf("%d rows SENDING while one job is in Send, want %d (it and %d more jobs of %d)", got, want, maxJobs-1, job)
		}
		close(snd.gate)
		transporttest.Eventually(t, 10*time.Second, "backlog delivered", func() bool { return h.rt.Snapshot().Acked == uint64(backlog) })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestResultsOfAPollRideInItsCommit: the results the sender hands back
// while the input is being read are acknowledged, and the jobs they free
// claimed, in the commit that follows that read. Before, they waited for
// the next turn: their rows stayed SENDING a whole group's read longer,
// and with fewer jobs out than two groups the sender got new jobs only
// every other commit (1,024 then 2,048 rows a turn with three).
func TestResultsOfAPollRideInItsCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		// Each Poll reads one job's events (the group grows to
		// groupJobs of them) and takes 10 ms; a job takes 1 ms to send,
		// so the jobs of one commit are all answered during the first
		// read of the next group.
		cfg.Queue.Fsync, cfg.Agent.BulkMaxSize, cfg.Queue.PollBatchSize = true, 1024, 1024
		in := &fakeInput{}
		snd := newFakeSender(nil)
		snd.delay = time.Millisecond
		opts := newOptions(t, cfg, t.TempDir(), in, snd)
		job := jobSize(opts)
		const polls = 16 + 8*groupJobs
		in.push(lineEvents("a.log", 0, (polls+2*groupJobs)*job)...)
		var rt atomic.Pointer[Agent] // set once startRuntime returns
		var sent, acked []int        // rows sent, and rows acknowledged, when each Poll starts
		in.onPoll = func() {
			snd.mu.Lock()
			sent = append(sent, len(snd.sends))
			snd.mu.Unlock()
			n := 0
			if r := rt.Load(); r != nil {
				n = int(r.Snapshot().Acked)
			}
			acked = append(acked, n)
			time.Sleep(10 * time.Millisecond)
		}
		h := startRuntime(t, opts)
		rt.Store(h.rt)
		transporttest.Eventually(t, 10*time.Second, "reads", func() bool {
			in.mu.Lock()
			defer in.mu.Unlock()
			return in.polls >= polls
		})
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		// Past the first groups (1, 2, then 4 jobs): what had been sent
		// when a group's reads began is acknowledged when the next
		// group's reads begin, groupJobs reads later.
		for i := 16; i < polls; i++ {
			if acked[i] < sent[i-groupJobs+1] {
				t.Fatalf("at read %d, %d rows acknowledged, want at least the %d sent by read %d: the results of a group's reads waited a turn (sent %v, acked %v)",
					i, acked[i], sent[i-groupJobs+1], i-groupJobs+1, sent[:polls], acked[:polls])
			}
		}
	})
}

// TestJobsOutBoundedInBytes: however big the events, the jobs out hold
// about maxJobs·jobBytes of payload, not maxJobs·jobSize events: a job
// ends at jobBytes, and an event bigger than that is a job of its own.
// Every event is still delivered, once.
func TestJobsOutBoundedInBytes(t *testing.T) {
	for _, tt := range []struct {
		name      string
		eventSize int
		perJob    int // rows a job holds
	}{
		{"40 KiB events", 40 << 10, jobBytes / (40 << 10)},
		{"events over jobBytes", jobBytes + jobBytes/2, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)
				cfg.Queue.Fsync = true
				in := &fakeInput{}
				snd := newFakeSender(nil)
				snd.gate = make(chan struct{})
				snd.started = make(chan struct{}, 1)
				opts := newOptions(t, cfg, t.TempDir(), in, snd)
				events := 3 * maxJobs * tt.perJob
				for i := range events {
					ev := lineEvent("a.log", i)
					ev.Payload = fmt.Appendf(nil, `{"_line":%d,"pad":"%s"}`, i, strings.Repeat("x", tt.eventSize-30))
					in.push(ev)
				}
				h := startRuntime(t, opts)
				<-snd.started
				transporttest.Eventually(t, 10*time.Second, "events appended", func() bool { return h.rt.Snapshot().RowsAppended == uint64(events) })
				time.Sleep(2 * claimRecheckInterval)
				synctest.Wait()
				// Claims follow the appends, so some jobs hold fewer rows.
				if got, most := h.rt.Snapshot().Queue.Sending, int64(maxJobs*tt.perJob); got == 0 || got > most {
					t.Errorf("%d rows SENDING while one job is in Send, want 1..%d (%d jobs of at most %d rows of %d bytes)",
						got, most, maxJobs, tt.perJob, tt.eventSize)
				}
				close(snd.gate)
				transporttest.Eventually(t, 10*time.Second, "events delivered", func() bool { return h.rt.Snapshot().Acked == uint64(events) })
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				if ids, total := snd.stats(); ids != events || total != events {
					t.Errorf("%d batch ids sent %d times, want each of %d once", ids, total, events)
				}
			})
		})
	}
}

// Rows appended while every job slot is taken are claimed as soon as a
// slot frees, not at the next periodic look for due rows
// (claimRecheckInterval): the commit that appended them could not claim,
// and the commits that follow, taking the jobs' results, must.
func TestRowsAppendedWhileSlotsAreFullGoOutOnceOneFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Queue.Fsync, cfg.Agent.BulkMaxSize = true, 1024
		in := &fakeInput{}
		snd := newFakeSender(nil)
		snd.gate = make(chan struct{})
		opts := newOptions(t, cfg, t.TempDir(), in, snd)
		job := jobSize(opts)
		// The last job is one row short: its claim emptied the queue.
		first := maxJobs*job - 1
		in.push(lineEvents("a.log", 0, first)...)
		h := startRuntime(t, opts)
		transporttest.Eventually(t, 10*time.Second, "every slot taken", func() bool {
			return h.rt.Snapshot().Queue.Sending == int64(first)
		})
		synctest.Wait()
		in.push(lineEvents("a.log", first, first+job)...)
		transporttest.Eventually(t, 10*time.Second, "the next group appended", func() bool {
			return h.rt.Snapshot().RowsAppended == uint64(first+job)
		})
		synctest.Wait()
		start := time.Now()
		close(snd.gate)
		transporttest.Eventually(t, 10*time.Second, "every row delivered", func() bool {
			return h.rt.Snapshot().Acked == uint64(first+job)
		})
		if waited := time.Since(start); waited >= claimRecheckInterval/2 {
			t.Fatalf("the rows appended while every slot was taken went out %v after the slots freed, want at once (the periodic look is every %v)",
				waited, claimRecheckInterval)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}
