package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

func TestBackpressureStopsReadingUntilAcks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Queue.MaxBytes = 256 << 10
		in := &fakeInput{}
		pad := bytes.Repeat([]byte("x"), 200)
		const n = 5000
		for i := 0; i < n; i++ {
			ev := lineEvent("a.log", i)
			ev.Payload = append(ev.Payload, pad...)
			in.push(ev)
		}
		snd := newFakeSender(nil)
		snd.gate = make(chan struct{})
		h := startRuntime(t, newOptions(t, cfg, home, in, snd))
		transporttest.Eventually(t, 5*time.Second, "backpressure", func() bool { return h.rt.Snapshot().Backpressure })
		time.Sleep(time.Second)
		synctest.Wait()
		left := in.left()
		if left == 0 {
			t.Fatal("the whole input was read although the queue is above queue.max-bytes")
		}
		st := h.rt.Snapshot()
		if st.Queue.SizeBytes <= cfg.Queue.MaxBytes || st.Dropped != 0 {
			t.Fatalf("queue size %d, max %d, dropped %d", st.Queue.SizeBytes, cfg.Queue.MaxBytes, st.Dropped)
		}
		close(snd.gate)
		transporttest.Eventually(t, 20*time.Second, "all acked", func() bool { return h.rt.Snapshot().Acked == n })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if in.left() != 0 || h.rt.Snapshot().Backpressure {
			t.Fatalf("input left %d, backpressure %v after the backlog drained", in.left(), h.rt.Snapshot().Backpressure)
		}
		if d, _ := snd.stats(); d != n {
			t.Fatalf("%d rows delivered, want %d", d, n)
		}
	})
}

func TestNonModeDropsRefusedRowsAndKeepsNoState(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t)
	cfg.Agent.Delivery = DeliveryNon
	cfg.Queue.MaxBytes = 1 // ignored in NON mode
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 100)...)
	snd := newFakeSender(func(b transport.Batch, n int) transport.Outcome {
		if b.ID%10 == 0 {
			return transport.Failed
		}
		return transport.Received
	})
	h := startRuntime(t, newOptions(t, cfg, home, in, snd))
	if !in.openOptions().FirstStart {
		t.Fatal("NON mode: every start is a first start")
	}
	transporttest.Eventually(t, 5*time.Second, "100 sent", func() bool {
		st := h.rt.Snapshot()
		return st.Acked+st.Dropped == 100
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	st := h.rt.Snapshot()
	if st.Dropped != 10 || st.Acked != 90 {
		t.Fatalf("dropped %d acked %d, want 10 and 90", st.Dropped, st.Acked)
	}
	if _, total := snd.stats(); total != 100 {
		t.Fatalf("%d sends, want 100 (no retries in NON mode)", total)
	}
	if _, err := os.Stat(filepath.Join(home, "data", "wal.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("NON mode created a WAL: %v", err)
	}
	h2 := startRuntime(t, newOptions(t, cfg, home, &fakeInput{}, newFakeSender(nil)))
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
}

// A row that never reached the engine is not a failure in NON mode: it is
// kept (in memory) and sent once the engine is back.
func TestNonModeKeepsUnsentRows(t *testing.T) {
	cfg := testConfig(t)
	cfg.Agent.Delivery = DeliveryNon
	clientOptions(t, cfg).InitialBackoff = 20 * time.Millisecond
	clientOptions(t, cfg).MaxBackoff = 50 * time.Millisecond
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 50)...)
	snd := newFakeSender(nil)
	snd.callErr = func(call int) error {
		if call <= 3 {
			return transport.ErrUnavailable
		}
		return nil
	}
	h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, snd))
	transporttest.Eventually(t, 5*time.Second, "50 acks", func() bool { return h.rt.Snapshot().Acked == 50 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if st := h.rt.Snapshot(); st.Dropped != 0 {
		t.Fatalf("dropped %d rows that never reached the engine", st.Dropped)
	}
}

func TestInputIDSurvivesALostIDFile(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t)
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 3)...)
	h := startRuntime(t, newOptions(t, cfg, home, in, newFakeSender(nil)))
	transporttest.Eventually(t, 5*time.Second, "3 acks", func() bool { return h.rt.Snapshot().Acked == 3 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// The id file was deleted: a new random id comes in, not explicit.
	in2 := &fakeInput{}
	opts := newOptions(t, cfg, home, in2, newFakeSender(nil))
	opts.IDs.Input = "regenerated"
	h2 := startRuntime(t, opts)
	if got := h2.rt.Snapshot().InputID; got != "input-1" {
		t.Fatalf("input id = %q, want the WAL's input-1", got)
	}
	if o := in2.openOptions(); o.FirstStart || string(o.Saved["a.log"]) != "2" {
		t.Fatalf("open = %+v, want the saved positions", o)
	}
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}

	// An explicit input.id wins: a new source, a first start.
	in3 := &fakeInput{}
	opts = newOptions(t, cfg, home, in3, newFakeSender(nil))
	opts.InputList[0].ID = "explicit" // agent.yaml sets input.id
	h3 := startRuntime(t, opts)
	if o := in3.openOptions(); !o.FirstStart || len(o.Saved) != 0 || h3.rt.Snapshot().InputID != "explicit" {
		t.Fatalf("explicit id: open = %+v id %q", o, h3.rt.Snapshot().InputID)
	}
	if err := h3.stop(); err != nil {
		t.Fatal(err)
	}
}

type failingFactory struct{ fakeFactory }

func (failingFactory) Create(input.Config, input.Settings) (input.Input, error) {
	return nil, errors.New("paths: permission denied")
}

func TestStartupFailureReleasesWhatWasOpened(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t)
	snd := newFakeSender(nil)
	opts := newOptions(t, cfg, home, nil, snd)
	opts.Inputs = input.NewRegistry(failingFactory{})
	ready := false
	opts.OnReady = func() { ready = true }
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	err = rt.Run(t.Context())
	if err == nil || exitcode.For(err) != 1 || ready {
		t.Fatalf("Run = %v (ready %v), want a start-up failure", err, ready)
	}
	if want := "create input fake"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Fatalf("error %q does not name the failing step %q", err, want)
	}
	if !snd.closed {
		t.Fatal("sender not closed after the input failed to start")
	}
	// The WAL was closed: another runtime can open it at once.
	h := startRuntime(t, newOptions(t, cfg, home, &fakeInput{}, newFakeSender(nil)))
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

func TestInputErrorStopsTheAgentAfterFlushing(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t)
	cfg.Agent.FlushInterval = 3_600_000 * time.Millisecond
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 5)...)
	h := startRuntime(t, newOptions(t, cfg, home, in, newFakeSender(nil)))
	transporttest.Eventually(t, 5*time.Second, "read", func() bool { return in.left() == 0 })
	in.mu.Lock()
	in.pollErr = errors.New("read /var/log/a.log: input/output error")
	in.mu.Unlock()
	err := h.wait(5 * time.Second)
	if err == nil || exitcode.For(err) != 1 {
		t.Fatalf("Run = %v, want an input failure", err)
	}
	if c := readCounts(t, home); c.Pending != 5 {
		t.Fatalf("WAL = %+v, want the 5 buffered events", c)
	}
}

// The bubble's clock makes "right after the acks" and "once the retention
// passed" exact; on real time a loaded machine could pass the 300 ms first.
func TestAckedRowsAreKeptForTheRetentionThenDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Queue.AckedRetention = 300 * time.Millisecond
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 20)...)
		h := startRuntime(t, newOptions(t, cfg, home, in, newFakeSender(nil)))
		transporttest.Eventually(t, 5*time.Second, "20 acks", func() bool { return h.rt.Snapshot().Acked == 20 })
		// The ack counter moves before the loop publishes the queue's
		// counts: let it finish the commit (the clock stands still).
		synctest.Wait()
		if st := h.rt.Snapshot(); st.Queue.Acked != 20 {
			t.Fatalf("ACKED rows right after the acks: %d, want 20 (retention)", st.Queue.Acked)
		}
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		if st := h.rt.Snapshot(); st.Queue.Acked != 20 {
			t.Fatalf("ACKED rows before the retention passed: %d, want 20", st.Queue.Acked)
		}
		transporttest.Eventually(t, 5*time.Second, "cleanup", func() bool { return h.rt.Snapshot().Queue.Acked == 0 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if c := readCounts(t, home); c.Total() != 0 {
			t.Fatalf("WAL after cleanup: %+v", c)
		}
	})
}

// An idle agent writes nothing: on flash storage every commit wears the
// card. Time is the bubble's, so "nothing in 5 s" is exact.
func TestIdleAgentDoesNotWriteTheWAL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		h := startRuntime(t, newOptions(t, cfg, t.TempDir(), &fakeInput{}, newFakeSender(nil)))
		synctest.Wait()
		before := h.rt.Snapshot().Commits
		time.Sleep(5 * time.Second) // 250 flush intervals, 1,000 idle polls
		synctest.Wait()
		if after := h.rt.Snapshot().Commits; after != before {
			t.Fatalf("%d transactions while idle", after-before)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// diskFull makes every transaction fail while full is set, like ENOSPC.
type diskFull struct {
	queue
	mu   sync.Mutex
	full bool
}

func (d *diskFull) set(v bool) { d.mu.Lock(); d.full = v; d.mu.Unlock() }

func (d *diskFull) Update(fn func(queueTx) error) error {
	d.mu.Lock()
	full := d.full
	d.mu.Unlock()
	if full {
		return &os.PathError{Op: "write", Path: "wal.db", Err: syscall.ENOSPC}
	}
	return d.queue.Update(fn)
}

func TestFullDiskPausesReadingAndLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Agent.BulkMaxSize = 50
		in := &fakeInput{}
		snd := newFakeSender(nil)
		disk := &diskFull{}
		opts := newOptions(t, cfg, home, in, snd)
		rt, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		rt.wrapQueue = func(q queue) queue { disk.queue = q; return disk }
		h := &harness{t: t, rt: rt, done: make(chan error, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		go func() { h.done <- rt.Run(ctx) }()
		transporttest.Eventually(t, 5*time.Second, "running", func() bool { return rt.Snapshot().State == "running" })
		disk.set(true)
		in.push(lineEvents("a.log", 0, 300)...)
		transporttest.Eventually(t, 5*time.Second, "write error reported", func() bool {
			return strings.Contains(rt.Snapshot().LastError, "no space left")
		})
		time.Sleep(time.Minute) // many WAL retries later, still nothing read past the buffer
		synctest.Wait()
		if left := in.left(); left != 250 {
			t.Fatalf("input left %d events, want 250: reading stops once the buffer is full", left)
		}
		if st := rt.Snapshot(); st.RowsAppended != 0 {
			t.Fatalf("%d rows appended on a full disk", st.RowsAppended)
		}
		disk.set(false)
		transporttest.Eventually(t, 10*time.Second, "300 acks", func() bool { return rt.Snapshot().Acked == 300 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if d, _ := snd.stats(); d != 300 {
			t.Fatalf("%d rows delivered, want 300", d)
		}
	})
}
