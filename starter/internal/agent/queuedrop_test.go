package agent

import (
	"fmt"
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// queueDropOptions runs inputs "keep" (lines 0..keep) and "spam" (lines
// 1000..1000+spam) with the given queue-drop values, under when-full:
// drop-oldest and max-bytes, into snd.
func queueDropOptions(t *testing.T, snd *fakeSender, maxBytes int64, keepDrop, spamDrop string, keep, spam int, accounted bool) Options {
	t.Helper()
	cfg := testConfig(t)
	cfg.Agent.Account = accounted
	cfg.Agent.BulkMaxSize = 5
	cfg.Queue.PollBatchSize = 5
	cfg.Queue.MaxBytes = maxBytes
	cfg.Queue.WhenFull = WhenFullDropOldest
	clientOptions(t, cfg).MaxInFlight = 1
	ins := map[namedConfig]*fakeInput{"keep": {}, "spam": {}}
	ins["keep"].push(bigEvents("k.log", 0, keep)...)
	ins["spam"].push(bigEvents("s.log", 1000, 1000+spam)...)
	opts := newOptions(t, cfg, t.TempDir(), nil, snd)
	opts.Inputs = input.NewRegistry(listFactory{ins: ins})
	opts.InputList = []InputSpec{
		{ID: "keep", Type: "fake", Config: namedConfig("keep"), QueueDrop: keepDrop},
		{ID: "spam", Type: "fake", Config: namedConfig("spam"), QueueDrop: spamDrop},
	}
	return opts
}

// Under a small queue.max-bytes with the engine not answering, a never
// input loses no row while a first input's rows are dropped; with both
// normal the same flood drops rows of both. With agent.account the gap
// records cover exactly the first input's rows dropped.
func TestQueueDropNeverKeepsFirstDrops(t *testing.T) {
	for _, tc := range []struct {
		keepDrop, spamDrop string
		keepLoses          bool
		accounted          bool
	}{
		{QueueDropNever, QueueDropFirst, false, false},
		{QueueDropNormal, "", true, false},
		{QueueDropNever, QueueDropFirst, false, true},
	} {
		t.Run(fmt.Sprintf("keep %s, spam %s, account %v", tc.keepDrop, tc.spamDrop, tc.accounted), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const keep, spam, maxBytes = 30, 150, 60_000 // rows of ~1 KiB
				snd := newFakeSender(nil)
				snd.gate = make(chan struct{})
				h := startRuntime(t, queueDropOptions(t, snd, maxBytes, tc.keepDrop, tc.spamDrop, keep, spam, tc.accounted))
				transporttest.Eventually(t, time.Minute, "all read", func() bool {
					st := h.rt.Snapshot()
					return st.EventsRead == keep+spam
				})
				time.Sleep(2 * time.Second) // the last groups' commits
				synctest.Wait()
				st := h.rt.Snapshot()
				if st.Drops.FullRows == 0 {
					t.Fatalf("nothing dropped: %+v", st.Drops)
				}
				close(snd.gate)
				transporttest.Eventually(t, time.Minute, "backlog delivered", func() bool {
					st := h.rt.Snapshot()
					return st.Queue.Pending == 0 && st.Queue.Sending == 0
				})
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				got := deliveredLines(t, snd)
				keptKeep, keptSpam := 0, 0
				for n := range got {
					if n < 1000 {
						keptKeep++
					} else {
						keptSpam++
					}
				}
				if lost := keep - keptKeep; (lost > 0) != tc.keepLoses {
					t.Fatalf("keep (%q) lost %d of %d rows; spam kept %d of %d", tc.keepDrop, lost, keep, keptSpam, spam)
				}
				if keptSpam == spam {
					t.Fatalf("spam (%q) lost no row", tc.spamDrop)
				}
				t.Logf("keep delivered %d of %d, spam %d of %d, dropped %d", keptKeep, keep, keptSpam, spam, st.Drops.FullRows)
				if !tc.accounted {
					return
				}
				rep := auditSent(t, snd)
				if !rep.OK() || len(rep.Streams) != 2 {
					t.Fatalf("audit: %+v", rep)
				}
				for _, s := range rep.Streams {
					n, gaps := spam, spam-keptSpam
					if s.Input == "keep" {
						n, gaps = keep, 0
					}
					if s.Max != uint64(n) || s.Rows+s.GapRows != int64(n) || s.GapRows != int64(gaps) || s.Duplicates != 0 {
						t.Fatalf("stream %+v: want %d produced, %d in gap records", s, n, gaps)
					}
				}
			})
		})
	}
}

// When only never rows fill the queue, reading pauses as with when-full:
// block and status says so (Drops.Held); once the engine answers, every
// row is delivered and the pause ends.
func TestQueueDropNeverHoldsReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keep, spam, maxBytes = 120, 10, 60_000
		snd := newFakeSender(nil)
		snd.gate = make(chan struct{})
		h := startRuntime(t, queueDropOptions(t, snd, maxBytes, QueueDropNever, QueueDropFirst, keep, spam, false))
		transporttest.Eventually(t, time.Minute, "held", func() bool { return h.rt.Snapshot().Drops.Held })
		time.Sleep(2 * time.Second)
		synctest.Wait()
		st := h.rt.Snapshot()
		if !st.Drops.Held || !st.Backpressure || st.EventsRead == keep+spam {
			t.Fatalf("held %v, backpressure %v, read %d of %d: want reading paused", st.Drops.Held, st.Backpressure, st.EventsRead, keep+spam)
		}
		close(snd.gate)
		transporttest.Eventually(t, time.Minute, "every never row delivered", func() bool {
			got := deliveredLines(t, snd)
			for n := range keep {
				if !got[n] {
					return false
				}
			}
			st := h.rt.Snapshot()
			return st.EventsRead == keep+spam && st.Queue.Pending == 0 && st.Queue.Sending == 0
		})
		if st := h.rt.Snapshot(); st.Drops.Held {
			t.Fatalf("still held after the backlog drained: %+v", st.Drops)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// Inputs without a policy other than normal give the WAL no policies, so
// its drops look up no row's input.
func TestInputDropPolicies(t *testing.T) {
	for _, tc := range []struct {
		drops []string
		want  map[string]wal.DropPolicy
	}{
		{[]string{"", ""}, nil},
		{[]string{QueueDropNormal, ""}, nil},
		{[]string{QueueDropFirst, QueueDropNever}, map[string]wal.DropPolicy{"a": wal.DropFirst, "b": wal.DropNever}},
		{[]string{QueueDropNormal, QueueDropNever}, map[string]wal.DropPolicy{"b": wal.DropNever}},
	} {
		specs := []InputSpec{{ID: "a", QueueDrop: tc.drops[0]}, {ID: "b", QueueDrop: tc.drops[1]}}
		if got := inputDropPolicies(specs); !maps.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%q: policies %v, want %v", tc.drops, got, tc.want)
		}
	}
	for v, ok := range map[string]bool{"": true, "normal": true, "first": true, "never": true, "Never": false, "oldest": false, " first": false} {
		if err := CheckQueueDrop(v); (err == nil) != ok {
			t.Errorf("CheckQueueDrop(%q) = %v", v, err)
		}
	}
}
