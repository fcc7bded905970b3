package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// ackingInput is a fakeInput that implements input.Acker and checks, at
// each Committed, that the events it is told about are durable: the
// queue's transactions that returned without error appended at least as
// many rows.
type ackingInput struct {
	fakeInput
	q *durableCount

	mu    sync.Mutex
	acked int
	early []string
}

func (a *ackingInput) Committed(n int) {
	durable := a.q.durable()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked += n
	if a.acked > durable {
		a.early = append(a.early, fmt.Sprintf("told %d events are stored, %d rows durable", a.acked, durable))
	}
}

func (a *ackingInput) ackedCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acked
}

// durableCount wraps the queue: rows appended by a transaction count as
// durable only once Update returned nil; while full is set every
// transaction fails.
type durableCount struct {
	queue
	mu   sync.Mutex
	rows int
	full bool
}

func (d *durableCount) durable() int { d.mu.Lock(); defer d.mu.Unlock(); return d.rows }

func (d *durableCount) setFull(v bool) { d.mu.Lock(); d.full = v; d.mu.Unlock() }

type countingTx struct {
	queueTx
	n *int
}

func (c countingTx) Append(id string, payloads [][]byte) error {
	*c.n += len(payloads)
	return c.queueTx.Append(id, payloads)
}

func (d *durableCount) Update(fn func(queueTx) error) error {
	d.mu.Lock()
	full := d.full
	d.mu.Unlock()
	if full {
		return fmt.Errorf("write wal.db: no space left on device")
	}
	n := 0
	err := d.queue.Update(func(tx queueTx) error {
		n = 0
		return fn(countingTx{queueTx: tx, n: &n})
	})
	if err == nil {
		d.mu.Lock()
		d.rows += n
		d.mu.Unlock()
	}
	return err
}

// The scheduler tells an Acker input about its events only after the
// transaction that stored them committed, never before, and never while
// the WAL cannot be written; every event is told about once.
func TestAckerHearsOnlyOfDurableEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Agent.BulkMaxSize = 50
		q := &durableCount{}
		in := &ackingInput{q: q}
		opts := newOptions(t, cfg, t.TempDir(), in, newFakeSender(nil))
		rt, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		rt.wrapQueue = func(inner queue) queue { q.queue = inner; return q }
		h := &harness{t: t, rt: rt, done: make(chan error, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		go func() { h.done <- rt.Run(ctx) }()
		transporttest.Eventually(t, 5*time.Second, "running", func() bool { return rt.Snapshot().State == "running" })

		in.push(lineEvents("a.log", 0, 120)...)
		transporttest.Eventually(t, 5*time.Second, "120 acked to the input", func() bool { return in.ackedCount() == 120 })

		q.setFull(true)
		in.push(lineEvents("a.log", 120, 200)...)
		time.Sleep(10 * time.Second) // many failed commits
		synctest.Wait()
		if got := in.ackedCount(); got != 120 {
			t.Fatalf("input told of %d events while the WAL could not be written, want 120", got)
		}
		q.setFull(false)
		transporttest.Eventually(t, 10*time.Second, "200 acked to the input", func() bool { return in.ackedCount() == 200 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if got := in.ackedCount(); got != 200 {
			t.Fatalf("input told of %d events, want each of 200 once", got)
		}
		if len(in.early) > 0 {
			t.Fatalf("acks before durability: %v", in.early)
		}
	})
}
