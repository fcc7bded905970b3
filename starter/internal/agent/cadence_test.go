package agent

import (
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// At one line a second, lines wait commit-interval-ms for their commit
// and the acks ride on the next one: a few commits, not two per line, and
// every line sent within the interval (plus a poll) of being read.
func TestLowRateLinesAndAcksShareACommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Agent.FlushInterval = time.Second
		cfg.Agent.CommitInterval = 4 * time.Second
		in := &fakeInput{}
		snd := newFakeSender(nil)
		h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, snd))
		synctest.Wait()
		before := h.rt.Snapshot().Commits
		const lines = 20
		pushed := make([]time.Time, lines)
		for i := range lines {
			pushed[i] = time.Now()
			in.push(lineEvent("a.log", i))
			time.Sleep(time.Second)
		}
		time.Sleep(2 * cfg.Agent.CommitInterval)
		synctest.Wait()
		st := h.rt.Snapshot()
		if st.Acked != lines {
			t.Fatalf("acked %d of %d", st.Acked, lines)
		}
		// One commit per interval, and one for the last acks.
		if n := st.Commits - before; n > lines/4+1 {
			t.Fatalf("%d commits for %d lines at 1/s, want at most %d", n, lines, lines/4+1)
		}
		snd.mu.Lock()
		for id, payload := range snd.last {
			_, num, ok := strings.Cut(string(payload), "line-")
			num, _, _ = strings.Cut(num, `"`)
			i, err := strconv.Atoi(num)
			if !ok || err != nil || i >= lines {
				t.Fatalf("payload %q: no line number", payload)
			}
			if wait := snd.times[id][0].Sub(pushed[i]); wait > cfg.Agent.CommitInterval+cfg.Agent.IdleSleep {
				t.Errorf("line %d sent %v after it was read, want at most %v", i, wait, cfg.Agent.CommitInterval)
			}
		}
		snd.mu.Unlock()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// Only an event its input can read again (one with a position) waits
// commit-interval-ms; any other waits flush-interval-ms.
func TestCommitWaitDependsOnThePosition(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   input.Event
		want time.Duration // when it is appended
	}{
		{"a line with a position waits commit-interval-ms", lineEvent("a.log", 1), 4 * time.Second},
		{"an event without one waits flush-interval-ms", input.Event{Payload: []byte(`{"payload":"x"}`)}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)
				cfg.Agent.FlushInterval = time.Second
				cfg.Agent.CommitInterval = 4 * time.Second
				in := &fakeInput{}
				h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, newFakeSender(nil)))
				in.push(tc.ev)
				time.Sleep(tc.want - 100*time.Millisecond)
				synctest.Wait()
				if n := h.rt.Snapshot().RowsAppended; n != 0 {
					t.Fatalf("appended %d rows before %v", n, tc.want)
				}
				time.Sleep(200 * time.Millisecond)
				synctest.Wait()
				if n := h.rt.Snapshot().RowsAppended; n != 1 {
					t.Fatalf("appended %d rows at %v, want 1", n, tc.want+100*time.Millisecond)
				}
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// The lines read after a burst's last full group, once the input ran
// dry, commit within idle-sleep-ms instead of waiting commit-interval-ms
// like the lines of a low rate; a line read after that waits as before.
func TestRestOfABurstCommitsWithoutWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Agent.BulkMaxSize = 10
		cfg.Agent.IdleSleep = 200 * time.Millisecond
		cfg.Agent.FlushInterval = time.Second
		cfg.Agent.CommitInterval = 4 * time.Second
		in := &fakeInput{}
		// Groups of 10, 20, ..., 320, then 512 (no fsync), take 2,678
		// lines; the last 329 are the rest of the burst.
		const burst = 3007
		in.push(lineEvents("a.log", 0, burst)...)
		snd := newFakeSender(nil)
		snd.block = true // no send result adds commits of its own
		h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, snd))
		transporttest.Eventually(t, 5*time.Second, "input read", func() bool { return in.left() == 0 })
		time.Sleep(2 * cfg.Agent.IdleSleep)
		synctest.Wait()
		if n := h.rt.Snapshot().RowsAppended; n != burst {
			t.Fatalf("%d of %d rows appended %v after the input ran dry, want all: the rest of a burst waits at most idle-sleep-ms",
				n, burst, 2*cfg.Agent.IdleSleep)
		}
		in.push(lineEvent("a.log", burst))
		time.Sleep(2 * cfg.Agent.IdleSleep)
		synctest.Wait()
		if n := h.rt.Snapshot().RowsAppended; n != burst {
			t.Fatalf("%d rows appended, want %d: a line after the burst waits commit-interval-ms", n, burst)
		}
		time.Sleep(cfg.Agent.CommitInterval)
		synctest.Wait()
		if n := h.rt.Snapshot().RowsAppended; n != burst+1 {
			t.Fatalf("%d rows appended, want %d once commit-interval-ms passed", n, burst+1)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}
