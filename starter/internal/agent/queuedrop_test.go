package agent

import (
	"fmt"
	"maps"
	"slices"
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
func queueDropOptions(t *testing.T, snd *fakeSender, maxBytes int64, keepDrop, spamDrop string, keep, spam int, accounted bool) (Options, map[namedConfig]*fakeInput) {
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
	return opts, ins
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
				opts, _ := queueDropOptions(t, snd, maxBytes, tc.keepDrop, tc.spamDrop, keep, spam, tc.accounted)
				h := startRuntime(t, opts)
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
		opts, _ := queueDropOptions(t, snd, maxBytes, QueueDropNever, QueueDropFirst, keep, spam, false)
		h := startRuntime(t, opts)
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

// A size drop that finds only never rows over the bound reports the queue
// held, and the next walk waits dropRecheck rather than running at every
// commit; then a first row appended meanwhile goes.
func TestQueueDropHeldRecheck(t *testing.T) {
	clk := time.UnixMilli(1_700_000_000_000)
	q := openDrainQueue(t, DefaultQueueSettings(), func() time.Time { return clk })
	q.whenFull, q.maxBytes = WhenFullDropOldest, 10
	q.setInputDrop([]InputSpec{{ID: "v", QueueDrop: QueueDropNever}, {ID: "f", QueueDrop: QueueDropFirst}})
	add := func(src, p string) {
		t.Helper()
		if err := q.Update(func(tx queueTx) error { return tx.Append(src, [][]byte{[]byte(p)}) }); err != nil {
			t.Fatal(err)
		}
	}
	drop := func(now time.Time) queueDrops {
		t.Helper()
		var d queueDrops
		if err := q.Update(func(tx queueTx) error {
			var err error
			d, err = tx.Drop(now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	add("v", "never-row-1")
	add("v", "never-row-2")
	if d := drop(clk); !d.sized || !d.held || d.rows() != 0 {
		t.Fatalf("first walk: %+v, want held, nothing dropped", d)
	}
	add("f", "first")
	if d := drop(clk.Add(dropRecheck / 2)); d.sized || d.rows() != 0 {
		t.Fatalf("walk before the recheck: %+v, want none", d)
	}
	if d := drop(clk.Add(dropRecheck)); !d.sized || !d.held || d.full.Rows != 1 || !slices.Equal(d.full.Sources, []string{"f"}) {
		t.Fatalf("walk at the recheck: %+v, want the first row dropped, still held", d)
	}
	if got := msgs(claimRows(t, q, 10, clk)); len(got) != 2 {
		t.Fatalf("kept %v, want both never rows", got)
	}
}

// A reload that sets queue-drop applies it to the drops that follow.
func TestQueueDropReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keep, spam, maxBytes = 30, 150, 60_000
		snd := newFakeSender(nil)
		snd.gate = make(chan struct{})
		opts, ins := queueDropOptions(t, snd, maxBytes, "", "", 0, 0, false)
		h := startRuntime(t, opts)
		next := opts
		next.InputList = slices.Clone(opts.InputList)
		next.InputList[0].QueueDrop, next.InputList[1].QueueDrop = QueueDropNever, QueueDropFirst
		if err := h.rt.Reload(t.Context(), next, Replace{Inputs: []string{"keep", "spam"}}); err != nil {
			t.Fatal(err)
		}
		ins["keep"].push(bigEvents("k.log", 0, keep)...)
		ins["spam"].push(bigEvents("s.log", 1000, 1000+spam)...)
		transporttest.Eventually(t, time.Minute, "all read", func() bool { return h.rt.Snapshot().EventsRead == keep+spam })
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if st := h.rt.Snapshot(); st.Drops.FullRows == 0 {
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
		for n := range keep {
			if !got[n] {
				t.Fatalf("never row %d lost after the reload set queue-drop: never", n)
			}
		}
	})
}
