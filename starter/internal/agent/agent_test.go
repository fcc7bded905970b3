package agent

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

func TestDeliversEveryEventAndSavesPositions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 1000)...)
		snd := newFakeSender(nil)
		h := startRuntime(t, newOptions(t, cfg, home, in, snd))
		if o := in.openOptions(); !o.FirstStart || len(o.Saved) != 0 {
			t.Fatalf("first open = %+v, want FirstStart and no positions", o)
		}
		transporttest.Eventually(t, 10*time.Second, "1000 acks", func() bool { return h.rt.Snapshot().Acked == 1000 })
		if err := h.stop(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		want := map[string]int{}
		for _, ev := range lineEvents("a.log", 0, 1000) {
			want[string(ev.Payload)] = 1
		}
		got := snd.payloads()
		if len(got) != len(want) {
			t.Fatalf("delivered %d distinct payloads, want %d", len(got), len(want))
		}
		for p := range want {
			if got[p] != 1 {
				t.Fatalf("payload %s delivered %d times", p, got[p])
			}
		}
		st := h.rt.Snapshot()
		if st.State != "stopped" || st.EventsRead != 1000 || st.RowsAppended != 1000 {
			t.Fatalf("snapshot = %+v", st)
		}

		// Restart on the same WAL: positions come back, not a first start,
		// nothing is sent again.
		in2 := &fakeInput{}
		snd2 := newFakeSender(nil)
		h2 := startRuntime(t, newOptions(t, cfg, home, in2, snd2))
		o := in2.openOptions()
		if o.FirstStart || string(o.Saved["a.log"]) != "999" {
			t.Fatalf("second open = FirstStart %v saved %q, want false and 999", o.FirstStart, o.Saved["a.log"])
		}
		time.Sleep(time.Minute) // anything to send would have gone by now
		synctest.Wait()
		if err := h2.stop(); err != nil {
			t.Fatal(err)
		}
		if d, _ := snd2.stats(); d != 0 {
			t.Fatalf("restart re-sent %d rows", d)
		}
	})
}

func TestPositionOnlyEventsMoveThePositionWithoutRows(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t)
	in := &fakeInput{}
	in.push(input.Event{Pos: input.Position{Key: "b.log", State: []byte("4096")}})
	in.push(lineEvent("a.log", 1))
	in.push(input.Event{Pos: input.Position{Key: "gone.log", State: []byte("1")}})
	in.push(input.Event{Pos: input.Position{Key: "gone.log"}}) // forget
	snd := newFakeSender(nil)
	h := startRuntime(t, newOptions(t, cfg, home, in, snd))
	transporttest.Eventually(t, 5*time.Second, "1 ack", func() bool { return h.rt.Snapshot().Acked == 1 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if st := h.rt.Snapshot(); st.RowsAppended != 1 || st.EventsRead != 1 {
		t.Fatalf("rows %d events %d, want 1 and 1", st.RowsAppended, st.EventsRead)
	}
	pos := readPositions(t, home, "input-1")
	if string(pos["b.log"]) != "4096" || string(pos["a.log"]) != "1" {
		t.Fatalf("positions = %q", pos)
	}
	if _, ok := pos["gone.log"]; ok {
		t.Fatalf("forgotten key still stored: %q", pos)
	}
}

func TestGracefulShutdownFlushesTheBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Agent.FlushInterval = 3_600_000 * time.Millisecond // only shutdown flushes
		cfg.Agent.BulkMaxSize = 10_000
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 50)...)
		in.held = lineEvents("a.log", 50, 52) // a multiline group held back
		h := startRuntime(t, newOptions(t, cfg, home, in, newFakeSender(nil)))
		transporttest.Eventually(t, 5*time.Second, "input read", func() bool { return in.left() == 0 })
		time.Sleep(time.Minute) // still well before flush-interval-ms
		synctest.Wait()
		if st := h.rt.Snapshot(); st.RowsAppended != 0 {
			t.Fatalf("rows appended before the flush interval: %d", st.RowsAppended)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		c := readCounts(t, home)
		if c.Pending != 52 {
			t.Fatalf("after shutdown the WAL holds %+v, want 52 PENDING", c)
		}
		if pos := readPositions(t, home, "input-1"); string(pos["a.log"]) != "51" {
			t.Fatalf("position = %q, want 51", pos["a.log"])
		}
	})
}

// With output.on-refusal: exit a refusal stops the agent (the default
// retries: TestRefusalsKeepTheAgentReading).
func TestRefusalsStopTheAgentAfterFlushing(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{transport.ErrAuthFailed, 4},
		{transport.ErrDecryptFailed, 5},
	} {
		t.Run(tc.err.Error()[:20], func(t *testing.T) {
			home := t.TempDir()
			cfg := testConfig(t)
			cfg.Agent.FlushInterval = 3_600_000 * time.Millisecond
			cfg.Agent.BulkMaxSize = 5
			onRefusal(t, cfg, output.RefusalExit)
			in := &fakeInput{}
			in.push(lineEvents("a.log", 0, 7)...)
			snd := newFakeSender(nil)
			snd.callErr = func(int) error { return tc.err }
			h := startRuntime(t, newOptions(t, cfg, home, in, snd))
			err := h.wait(10 * time.Second)
			if !errors.Is(err, tc.err) || exitcode.For(err) != tc.code {
				t.Fatalf("Run = %v (exit %d), want %v (exit %d)", err, exitcode.For(err), tc.err, tc.code)
			}
			// Everything read was flushed, also below bulk-max-size, and
			// nothing stays SENDING; unread events stay in the input.
			if c := readCounts(t, home); c.Pending != 7-in.left() || c.Sending != 0 {
				t.Fatalf("WAL after fatal stop: %+v, want %d PENDING", c, 7-in.left())
			}
		})
	}
}

func TestSecondAgentOnTheSameWALIsRefused(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t)
	h := startRuntime(t, newOptions(t, cfg, home, &fakeInput{}, newFakeSender(nil)))
	defer h.stop()
	in2 := &fakeInput{}
	snd2 := newFakeSender(nil)
	rt, err := New(newOptions(t, cfg, home, in2, snd2))
	if err != nil {
		t.Fatal(err)
	}
	err = rt.Run(context.Background())
	if exitcode.For(err) != 6 {
		t.Fatalf("second Run = %v (exit %d), want exit 6", err, exitcode.For(err))
	}
	if in2.isOpened() {
		t.Fatal("the input was opened although the WAL was locked")
	}
}

// readCounts opens the WAL after the runtime stopped.
func readCounts(t *testing.T, home string) wal.Counts {
	t.Helper()
	w := openTestWAL(t, home)
	var c wal.Counts
	if err := w.View(func(tx *wal.ReadTx) error { c = tx.Counts(); return nil }); err != nil {
		t.Fatal(err)
	}
	return c
}

func readPositions(t *testing.T, home, source string) map[string][]byte {
	t.Helper()
	w := openTestWAL(t, home)
	var pos map[string][]byte
	if err := w.View(func(tx *wal.ReadTx) (err error) { pos, err = tx.Positions(source); return err }); err != nil {
		t.Fatal(err)
	}
	return pos
}

func openTestWAL(t *testing.T, home string) *wal.WAL {
	t.Helper()
	w, err := wal.Open(wal.Options{Path: home + "/data/wal.db", ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func TestStopDuringStartUpIsClean(t *testing.T) {
	cfg := testConfig(t)
	opts := newOptions(t, cfg, t.TempDir(), &fakeInput{}, newFakeSender(nil))
	opts.OnReady = func() { t.Error("ready although stopped before start") }
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rt.Run(ctx); err != nil {
		t.Fatalf("Run with a cancelled context = %v, want nil", err)
	}
}
