package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// openDrainQueue opens a WAL in a temp dir with the drain plan of qs.
func openDrainQueue(t *testing.T, qs QueueSettings, now func() time.Time) *walQueue {
	t.Helper()
	d, err := newDrainPlan(qs)
	if err != nil {
		t.Fatal(err)
	}
	o := wal.Options{Path: filepath.Join(t.TempDir(), "wal.db"), Now: now}
	if d != nil {
		o.Lanes, o.SendOrderBatchIDs = d.walLanes(), true
	}
	w, err := wal.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return &walQueue{w: w, drain: d, now: now, cleanupMax: 1}
}

func appendEvents(t *testing.T, q *walQueue, events ...string) {
	t.Helper()
	var ps [][]byte
	for _, e := range events {
		ps = append(ps, []byte(e))
	}
	if err := q.Update(func(tx queueTx) error { return tx.Append("in", ps) }); err != nil {
		t.Fatal(err)
	}
}

func claimRows(t *testing.T, q *walQueue, n int, now time.Time) []row {
	t.Helper()
	var rows []row
	if err := q.Update(func(tx queueTx) error {
		var err error
		rows, _, err = tx.Claim(n, 0, now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

// msgs are the "msg" fields of rows whose payload is {"level":..,"msg":..}.
func msgs(rows []row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		s := string(r.Payload)
		out[i] = s[strings.LastIndex(s, `"msg":"`)+7 : len(s)-2]
	}
	return out
}

func ev(level, msg string) string { return fmt.Sprintf(`{"level":%q,"msg":%q}`, level, msg) }

// Events are classified into lanes as they are appended; a claim sends
// the alarm lane first, then the default lane, each in input order, with
// batch ids increasing in the order sent; the debug lane gets its minimum
// share while the default lane waits.
func TestLanesClassifyAndClaimInPriorityOrder(t *testing.T) {
	clk := time.UnixMilli(1_700_000_000_000)
	qs := DefaultQueueSettings()
	qs.Lanes = []LaneSpec{
		{Name: "alarm", When: `level in ["error", "fatal"]`},
		{Name: "default"},
		{Name: "debug", When: `level == "debug"`, MinShare: 0.25},
	}
	q := openDrainQueue(t, qs, func() time.Time { return clk })
	appendEvents(t, q, ev("info", "i1"), ev("debug", "d1"), ev("error", "e1"), ev("info", "i2"),
		ev("debug", "d2"), ev("fatal", "e2"), ev("info", "i3"), ev("info", "i4"), `not json`)
	rows := claimRows(t, q, 4, clk)
	if got, want := msgs(rows), []string{"e1", "e2", "i1", "d1"}; !slices.Equal(got, want) {
		t.Fatalf("first claim = %v, want %v (alarm, then default, debug its quarter)", got, want)
	}
	rows = append(rows, claimRows(t, q, 100, clk)...)
	for i := 1; i < len(rows); i++ {
		if rows[i].BatchID <= rows[i-1].BatchID {
			t.Fatalf("batch id %d sent after %d", rows[i].BatchID, rows[i-1].BatchID)
		}
	}
	if got := string(rows[len(rows)-2].Payload); got != `not json` {
		t.Errorf("an event that is not JSON went to %q's place; want the default lane's end", got)
	}
}

// newest-first: the rows appended since the link came back go first, the
// backlog gets queue.backlog-share of each claim; each part in order.
func TestNewestFirstAfterTheLinkComesBack(t *testing.T) {
	clk := time.UnixMilli(1_700_000_000_000)
	qs := DefaultQueueSettings()
	qs.Drain, qs.BacklogShare = DrainNewestFirst, 0.25
	q := openDrainQueue(t, qs, func() time.Time { return clk })
	for i := range 8 {
		appendEvents(t, q, ev("info", fmt.Sprint("old", i)))
	}
	q.linkUp()
	// The claim after the link came back marks where new rows begin: it
	// finds only backlog.
	if got := msgs(claimRows(t, q, 1, clk)); !slices.Equal(got, []string{"old0"}) {
		t.Fatalf("claim with only backlog = %v", got)
	}
	appendEvents(t, q, ev("info", "new0"), ev("info", "new1"), ev("info", "new2"), ev("info", "new3"), ev("info", "new4"))
	got := msgs(claimRows(t, q, 4, clk))
	if want := []string{"new0", "new1", "new2", "old1"}; !slices.Equal(got, want) {
		t.Fatalf("claim = %v, want %v", got, want)
	}
	var st []LaneStatus
	if err := q.Update(func(tx queueTx) error {
		c, err := tx.Counts()
		st = c.Lanes
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Name != defaultLaneName || st[0].Rows != 8 {
		t.Errorf("lane status = %+v, want the default lane with 8 rows", st)
	}
}

func TestDrainSettingsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(q *QueueSettings)
		key  string
	}{
		{"drain", func(q *QueueSettings) { q.Drain = "lifo" }, "drain"},
		{"share", func(q *QueueSettings) { q.BacklogShare = 1.5 }, "backlog-share"},
		{"name", func(q *QueueSettings) { q.Lanes = []LaneSpec{{When: "true"}} }, "lanes[0].name"},
		{"twice", func(q *QueueSettings) { q.Lanes = []LaneSpec{{Name: "a", When: "true"}, {Name: "a"}} }, "lanes[1].name"},
		{"when", func(q *QueueSettings) { q.Lanes = []LaneSpec{{Name: "a", When: "level =="}} }, "lanes[0].when"},
		{"defaults", func(q *QueueSettings) { q.Lanes = []LaneSpec{{Name: "a"}, {Name: "b"}} }, "lanes"},
		{"sum", func(q *QueueSettings) {
			q.Lanes = []LaneSpec{{Name: "a", When: "true", MinShare: 0.7}, {Name: "b", MinShare: 0.7}}
		}, "lanes"},
	} {
		q := DefaultQueueSettings()
		tc.set(&q)
		err := q.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: Validate() = %v, want a problem with %s", tc.name, err, tc.key)
		}
	}
	q := DefaultQueueSettings()
	q.Drain, q.Lanes = DrainNewestFirst, []LaneSpec{{Name: "alarm", When: `level == "error"`, MinShare: 0.1}}
	if err := q.Validate(); err != nil {
		t.Errorf("valid lanes: %v", err)
	}
}

func tagged(tag string, from, to int) []input.Event {
	var out []input.Event
	for i := from; i < to; i++ {
		out = append(out, input.Event{Payload: fmt.Appendf(nil, `{"payload":"%s %d"}`, tag, i)})
	}
	return out
}

// The loop with newest-first: rows read while the engine was down are the
// backlog once a send goes through again; rows read after that go out
// before what is left of it, and batch ids grow in the order sent.
func TestNewestFirstThroughTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const old, fresh = 20_000, 20
		cfg := testConfig(t)
		cfg.Queue.Drain, cfg.Queue.BacklogShare = DrainNewestFirst, 0.2
		in := &fakeInput{}
		snd := newFakeSender(nil)
		snd.down = transport.ErrUnavailable
		h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, snd))
		in.push(tagged("old", 0, old)...)
		transporttest.Eventually(t, 10*time.Second, "the outage's rows in the WAL and a send failed", func() bool {
			snd.mu.Lock()
			calls := snd.calls
			snd.mu.Unlock()
			return h.rt.Snapshot().RowsAppended == old && calls > 0
		})
		// The engine is back; after its first batch it holds every send
		// until the test has read new rows.
		gate := make(chan struct{})
		snd.mu.Lock()
		snd.down = nil
		snd.afterSent = func(s *fakeSender, _ transport.Batch) {
			if s.gate == nil {
				s.gate = gate
			}
		}
		snd.mu.Unlock()
		transporttest.Eventually(t, 10*time.Second, "the first batch through", func() bool {
			snd.mu.Lock()
			defer snd.mu.Unlock()
			return len(snd.order) > 0
		})
		in.push(tagged("new", 0, fresh)...)
		transporttest.Eventually(t, 10*time.Second, "the new rows in the WAL", func() bool {
			return h.rt.Snapshot().RowsAppended == old+fresh
		})
		close(gate)
		transporttest.Eventually(t, 20*time.Second, "every row acked", func() bool { return h.rt.Snapshot().Acked == old+fresh })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		snd.mu.Lock()
		order := snd.order
		snd.mu.Unlock()
		lastOld, lastNew, nextNew := -1, -1, 0
		for i, b := range order {
			p := string(b.Payload)
			if strings.Contains(p, `"old `) {
				lastOld = i
			} else if want := fmt.Sprintf(`"new %d"`, nextNew); strings.Contains(p, want) {
				lastNew, nextNew = i, nextNew+1
			} else {
				t.Fatalf("batch %d: %s, want new %d next", i, p, nextNew)
			}
			if i > 0 && b.ID <= order[i-1].ID {
				t.Fatalf("batch id %d sent after %d", b.ID, order[i-1].ID)
			}
		}
		if nextNew != fresh || lastNew > lastOld {
			t.Fatalf("%d new rows in order, the last sent at %d of %d, the backlog's last at %d: want every new row before the backlog's end",
				nextNew, lastNew, len(order), lastOld)
		}
		t.Logf("new rows sent by position %d of %d; the backlog ended at %d", lastNew, len(order), lastOld)
	})
}

// queue.drop-from: lowest-lane makes drop-oldest take the default lane's
// rows before older alarm rows.
func TestDropFromLowestLane(t *testing.T) {
	clk := time.UnixMilli(1_700_000_000_000)
	qs := DefaultQueueSettings()
	qs.Lanes = []LaneSpec{{Name: "alarm", When: `level == "error"`}, {Name: "default"}}
	qs.DropFrom = DropFromLowestLane
	q := openDrainQueue(t, qs, func() time.Time { return clk })
	q.whenFull, q.maxBytes = WhenFullDropOldest, 1
	appendEvents(t, q, ev("error", "e1"))
	appendEvents(t, q, ev("info", "i1"))
	appendEvents(t, q, ev("error", "e2"))
	q.maxBytes = int64(2 * len(ev("error", "e1")))
	if err := q.Update(func(tx queueTx) error { _, err := tx.Drop(clk); return err }); err != nil {
		t.Fatal(err)
	}
	if got := msgs(claimRows(t, q, 10, clk)); !slices.Equal(got, []string{"e1", "e2"}) {
		t.Fatalf("kept %v, want both alarms (the default lane's row dropped first)", got)
	}
}
