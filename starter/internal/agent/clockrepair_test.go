package agent

import (
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// testClock is a boot clock that follows time.Now (a synctest bubble's
// too), whose wall time can be set as NTP or an operator would.
type testClock struct {
	mu    sync.Mutex
	start time.Time
	shift time.Duration
	boot  string
}

func newTestClock() *testClock { return &testClock{start: time.Now(), boot: "boot-1"} }

func (c *testClock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.shift)
}

func (c *testClock) SinceBoot() time.Duration { return time.Since(c.start) }

func (c *testClock) Boot() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.boot
}

// set makes the wall clock read t now.
func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shift = time.Until(t)
}

// tsEvents are events stamped with the clock's wall time now, as an input
// stamps what it reads.
func tsEvents(c *testClock, key string, from, n int) []input.Event {
	out := make([]input.Event, n)
	for i := range out {
		out[i] = input.Event{
			Payload: []byte(`{"_line":` + itoa(from+i) + `,"_ts":` + itoa64(c.Wall().UnixMilli()) + `,"payload":"x"}`),
			Pos:     input.Position{Key: key, State: []byte(itoa(from + i))},
		}
	}
	return out
}

func itoa64(n int64) string { b, _ := json.Marshal(n); return string(b) }

type sentEvent struct {
	Line     int   `json:"_line"`
	TS       int64 `json:"_ts"`
	Repaired bool  `json:"_ts_repaired"`
}

func sentEvents(t *testing.T, s *fakeSender) map[int]sentEvent {
	t.Helper()
	out := map[int]sentEvent{}
	for p := range s.payloads() {
		var e sentEvent
		if err := json.Unmarshal([]byte(p), &e); err != nil {
			t.Fatalf("payload %q: %v", p, err)
		}
		out[e.Line] = e
	}
	return out
}

// A gateway boots at 1970: rows are read and stored while the engine is
// down, then NTP sets the clock (a jump of decades), then more rows come
// and the engine answers. The rows stamped before the jump go out with
// their "_ts" moved by the jump, as the set clock would have stamped
// them, and "_ts_repaired": true; the rows after it go out as stamped.
// (Boots and their limits: clockjump's tests.)
func TestClockJumpRepairsStamps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newTestClock()
		boot := time.UnixMilli(1000) // 1970, one second after the epoch
		clk.set(boot)
		cfg := testConfig(t)
		in := &fakeInput{}
		snd := newFakeSender(nil)
		snd.setDown(transport.ErrUnavailable) // the link is down until the clock is set
		opts := newOptions(t, cfg, t.TempDir(), in, snd)
		opts.Clock = clk
		h := startRuntime(t, opts)
		in.push(tsEvents(clk, "a.log", 0, 5)...)
		transporttest.Eventually(t, time.Minute, "the 1970 rows stored", func() bool { return h.rt.Snapshot().RowsAppended == 5 })

		time.Sleep(30 * time.Second)
		ntp := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		clk.set(ntp)
		// The true time of a row stamped at s since boot: ntp - (30 s + its age).
		in.push(tsEvents(clk, "a.log", 5, 5)...)
		transporttest.Eventually(t, time.Minute, "the rows after the jump stored", func() bool { return h.rt.Snapshot().RowsAppended == 10 })
		snd.setDown(nil)
		transporttest.Eventually(t, time.Minute, "all delivered", func() bool {
			st := h.rt.Snapshot()
			return st.Queue.Pending == 0 && st.Queue.Sending == 0 && len(snd.payloads()) == 10
		})
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		got := sentEvents(t, snd)
		for line := range 10 {
			e := got[line]
			if line < 5 {
				// Stamped about 1 s after boot, 30 s before the jump to ntp.
				want := ntp.Add(-30 * time.Second).UnixMilli()
				if !e.Repaired || e.TS < want-2000 || e.TS > want+2000 {
					t.Errorf("line %d: _ts %v repaired %v; want about %v, repaired", line, time.UnixMilli(e.TS).UTC(), e.Repaired, time.UnixMilli(want).UTC())
				}
				continue
			}
			if e.Repaired || e.TS < ntp.UnixMilli() || e.TS > ntp.Add(time.Minute).UnixMilli() {
				t.Errorf("line %d: _ts %v repaired %v; want the set clock's, not repaired", line, time.UnixMilli(e.TS).UTC(), e.Repaired)
			}
		}
	})
}

// setDown makes every Send fail with err (nil: answer again).
func (s *fakeSender) setDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = err
}
