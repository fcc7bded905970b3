package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
)

// misbehaving answers like an engine, and breaks the one-reply-per-line
// exchange as bug says, counting lines per connection.
func misbehaving(bug string) func(conn int, line string) string {
	var mu sync.Mutex
	n := map[int]int{}
	held := map[int]string{}
	return func(conn int, line string) string {
		if strings.HasPrefix(line, "__AUTH__:") {
			return "ACK"
		}
		reply := "RECEIVED"
		if strings.HasPrefix(line, "__COMMIT__:") {
			reply = "PENDING"
		}
		mu.Lock()
		defer mu.Unlock()
		n[conn]++
		i := n[conn]
		switch bug {
		case "unsolicited": // a RECEIVED nothing asked for, now and then
			if i%50 == 0 {
				return reply + "\nRECEIVED"
			}
		case "doubled": // some replies twice
			if i%7 == 0 {
				return reply + "\n" + reply
			}
		case "dropped": // a reply never sent
			if i%40 == 0 {
				return silent
			}
		case "reordered": // a reply held back and sent after the next one
			if i%9 == 0 {
				held[conn] = reply
				return silent
			}
			if h, ok := held[conn]; ok {
				delete(held, conn)
				return reply + "\n" + h
			}
		}
		return reply
	}
}

// TestBuggyEnginesDeleteNothingUnread: whatever way an engine breaks the
// exchange, no batch is reported Received that it did not read, the
// violation is counted and logged at ERROR, and no attempt is charged.
func TestBuggyEnginesDeleteNothingUnread(t *testing.T) {
	for _, bug := range []string{"unsolicited", "doubled", "dropped", "reordered"} {
		for _, inflight := range []int{1, 64} {
			t.Run(fmt.Sprintf("%s/inflight=%d", bug, inflight), func(t *testing.T) {
				f := newRawFakeEngine(t, misbehaving(bug))
				cfg := testConfig(f.addr())
				cfg.MaxInFlight = inflight
				cfg.CommitEvery = 16
				// A dropped reply ends its session this soon; a loaded
				// machine may end more, which only costs reconnects.
				cfg.ReadTimeout = 100 * time.Millisecond
				cfg.MaxReconnectCycles = 4
				lb := withLog(&cfg)
				c := newClient(t, cfg)
				res, err := c.Send(sendCtx(t), seq(1, 200))
				if err != nil && !errors.Is(err, transport.ErrUnavailable) {
					t.Fatalf("Send: %v\n%s", err, lb.String())
				}
				_ = c.Close()
				f.drain()
				checkReceivedWereRead(t, f, res)
				for _, r := range res {
					// Only silence is charged (a reply held back looks
					// like one): a line never answered on a connection
					// that then failed, as for any engine.
					if r.Outcome == transport.Failed && !strings.Contains(r.Err.Error(), "written but never answered") {
						t.Fatalf("result %+v: an engine's misbehaviour charged a batch", r)
					}
				}
				st := c.Stats()
				// A reply missing (or, one line at a time, held back)
				// is silence, not a violation.
				silence := bug == "dropped" || bug == "reordered" && inflight == 1
				if !silence && (st.Violations == 0 || !protocolErrorLogged(lb.String())) {
					t.Fatalf("stats %+v: the violation was not counted and logged:\n%s", st, lb.String())
				}
			})
		}
	}
}

// TestBarrierRepliesOfTheWrongKind: a commit barrier answered as a batch,
// or a batch answered as a commit, takes back every outcome held since the
// last balanced barrier.
func TestBarrierRepliesOfTheWrongKind(t *testing.T) {
	for _, tt := range []struct {
		name          string
		batch, commit string
	}{
		{"barrier answered RECEIVED", "RECEIVED", "RECEIVED"},
		{"barrier answered QUEUE_FULL", "RECEIVED", "QUEUE_FULL:1"},
		{"batch answered ACK", "ACK:5", "PENDING"},
		{"batch answered RESEND", "RESEND", "PENDING"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newRawFakeEngine(t, func(conn int, line string) string {
				switch {
				case strings.HasPrefix(line, "__AUTH__:"):
					return "ACK"
				case conn > 0 && strings.HasPrefix(line, "__COMMIT__:"):
					return "PENDING"
				case conn > 0:
					return "RECEIVED"
				case strings.HasPrefix(line, "__COMMIT__:"):
					return tt.commit
				}
				return tt.batch
			})
			cfg := testConfig(f.addr())
			cfg.MaxInFlight = 8
			c := newClient(t, cfg)
			res, err := c.Send(sendCtx(t), seq(1, 5))
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			for _, r := range res {
				if r.Outcome != transport.Received {
					t.Fatalf("result %+v, want Received on the second session", r)
				}
			}
			if got := strings.Count(strings.Join(f.lines(1), ""), "__BATCH__:"); got != 5 {
				t.Fatalf("second session carried %d batches, want all 5 again: none was proved in step on the first", got)
			}
			if st := c.Stats(); st.Violations != 1 || st.Reverted+uint64(0) > 5 {
				t.Fatalf("stats %+v, want one violation", st)
			}
		})
	}
}

// TestBarrierWithoutCommitDrainsTheWindow: a receiver that answers
// __COMMIT__ with BAD_REQUEST gets no more of them on that session; its
// windows are drained instead.
func TestBarrierWithoutCommitDrainsTheWindow(t *testing.T) {
	f := newRawFakeEngine(t, func(_ int, line string) string {
		switch {
		case strings.HasPrefix(line, "__AUTH__:"):
			return "ACK"
		case strings.HasPrefix(line, "__COMMIT__:"):
			return "BAD_REQUEST"
		}
		return "RECEIVED"
	})
	cfg := testConfig(f.addr())
	cfg.MaxInFlight = 8
	cfg.CommitEvery = 4
	c := newClient(t, cfg)
	res, err := c.Send(sendCtx(t), seq(1, 40))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("result %+v", r)
		}
	}
	// Commits written before the first BAD_REQUEST came back: at most
	// one per CommitEvery batches of the window, and one more as the
	// window refills; none after it (40 batches would take 10).
	if n := strings.Count(strings.Join(f.lines(0), ""), "__COMMIT__:"); n > cfg.MaxInFlight/cfg.CommitEvery+1 {
		t.Fatalf("%d commit lines, want at most %d: the first BAD_REQUEST ends them", n, cfg.MaxInFlight/cfg.CommitEvery+1)
	}
}

// Settle asks about every id, sends the lost ones again lowest first and
// the lowest alone, and only then lets Send write on the session.
func TestSettleBeforeNewIDs(t *testing.T) {
	var mu sync.Mutex
	var order []string
	f := newRawFakeEngine(t, func(_ int, line string) string {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, strings.SplitN(line, ":", 3)[0]+":"+strings.SplitN(line, ":", 3)[1])
		switch {
		case strings.HasPrefix(line, "__AUTH__:"):
			return "ACK"
		case line == "__COMMIT__:3":
			return "ACK:3"
		case line == "__COMMIT__:4":
			return "PENDING"
		case line == "__COMMIT__:5", line == "__COMMIT__:6":
			return "RETRY"
		case line == "__COMMIT__:7":
			return "RESEND"
		case strings.HasPrefix(line, "__COMMIT__:"):
			return "PENDING"
		}
		return "RECEIVED"
	})
	cfg := testConfig(f.addr())
	cfg.MaxInFlight = 16
	cfg.Checkpoint = true
	c := newClient(t, cfg)
	// A new session is unsettled: Send writes nothing.
	res, err := c.Send(sendCtx(t), seq(20, 2))
	if !errors.Is(err, transport.ErrUnsettled) || res[0].Outcome != transport.NotSent {
		t.Fatalf("Send on an unsettled session = %+v, %v, want NotSent, ErrUnsettled", res, err)
	}
	stored := map[int64]transport.Batch{}
	for _, b := range seq(3, 5) {
		stored[b.ID] = b
	}
	answers, again, err := c.Settle(context.Background(), []int64{3, 4, 5, 6, 7}, func(id int64) (transport.Batch, bool) {
		b, ok := stored[id]
		return b, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []transport.Verdict{transport.VerdictAcked, transport.VerdictPending, transport.VerdictRetry, transport.VerdictRetry, transport.VerdictResend}
	for i, a := range answers {
		if a.Verdict != want[i] {
			t.Fatalf("answer %d = %+v, want %v", i, a, want[i])
		}
	}
	if len(again) != 3 || again[0].ID != 5 || again[2].ID != 7 {
		t.Fatalf("sent again %+v, want 5, 6, 7", again)
	}
	if c.Watermark() != 3 {
		t.Fatalf("watermark %d, want 3", c.Watermark())
	}
	if res, err = c.Send(sendCtx(t), seq(20, 2)); err != nil || res[1].Outcome != transport.Received {
		t.Fatalf("Send after Settle = %+v, %v", res, err)
	}
	mu.Lock()
	got := strings.Join(order, " ")
	mu.Unlock()
	// The lowest lost batch goes alone: its RECEIVED comes before 6 is
	// written, and the commits come before any batch.
	// Barriers ask just above the watermark (3), within the ids received
	// on the session (5 and up): 5.
	const wantOrder = "__AUTH__:<tok> __COMMIT__:3 __COMMIT__:4 __COMMIT__:5 __COMMIT__:6 __COMMIT__:7 __BATCH__:5 __BATCH__:6 __BATCH__:7 __COMMIT__:5 __BATCH__:20 __BATCH__:21 __COMMIT__:5"
	if strings.Replace(got, "__AUTH__:tok", "__AUTH__:<tok>", 1) != wantOrder {
		t.Fatalf("wire order\n got %s\nwant %s", got, wantOrder)
	}
}

// With checkpoint delivery, a session's first batch that ends Failed
// (here RETRY until the attempts run out; nothing was recorded) ends the
// call: a job started afresh would take the next batch's id as its floor
// and ACK the failed one unconfirmed. Nothing more is written, the rest
// come back NotSent with ErrUnsettled, and the session must be settled
// again before any batch goes out on it.
func TestCheckpointFirstBatchFailedEndsTheCall(t *testing.T) {
	var mu sync.Mutex
	var order []string
	f := newRawFakeEngine(t, func(_ int, line string) string {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(line, "__AUTH__:") {
			return "ACK"
		}
		order = append(order, strings.Join(strings.SplitN(line, ":", 3)[:2], ":"))
		switch {
		case strings.HasPrefix(line, "__COMMIT__:"):
			return "PENDING"
		case line == "__BATCH__:5:"+`{"n":5}`:
			return "RETRY"
		}
		return "RECEIVED"
	})
	cfg := testConfig(f.addr())
	cfg.MaxInFlight = 16
	cfg.MaxBatchSendAttempts = 3
	cfg.Checkpoint = true
	c := newClient(t, cfg)
	if _, _, err := c.Settle(sendCtx(t), nil, nil); err != nil {
		t.Fatal(err)
	}
	res, err := c.Send(sendCtx(t), seq(5, 3))
	if !errors.Is(err, transport.ErrUnsettled) {
		t.Fatalf("Send = %v, want ErrUnsettled", err)
	}
	want := []transport.Outcome{transport.Failed, transport.NotSent, transport.NotSent}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Fatalf("result %d = %+v, want %v", i, r, want[i])
		}
	}
	if res, err := c.Send(sendCtx(t), seq(6, 2)); !errors.Is(err, transport.ErrUnsettled) || res[0].Outcome != transport.NotSent {
		t.Fatalf("Send before a new settle = %+v, %v, want NotSent, ErrUnsettled", res, err)
	}
	mu.Lock()
	got := strings.Join(order, " ")
	mu.Unlock()
	// Three tries of 5 and the barrier that balances its outcome; 6 and 7
	// never go.
	if want := "__BATCH__:5 __BATCH__:5 __BATCH__:5 __COMMIT__:5"; got != want {
		t.Fatalf("wire order\n got %s\nwant %s", got, want)
	}
}

// The same holds for the lowest lost batch a settle sends again: when it
// fails, the settle stops there, unsettled.
func TestCheckpointSettleStopsAtAFailedResend(t *testing.T) {
	var mu sync.Mutex
	var order []string
	f := newRawFakeEngine(t, func(_ int, line string) string {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(line, "__AUTH__:") {
			return "ACK"
		}
		order = append(order, strings.Join(strings.SplitN(line, ":", 3)[:2], ":"))
		switch {
		case line == "__COMMIT__:3", line == "__COMMIT__:4":
			return "RETRY"
		case strings.HasPrefix(line, "__COMMIT__:"):
			return "PENDING"
		case strings.HasPrefix(line, "__BATCH__:3:"):
			return "RETRY"
		}
		return "RECEIVED"
	})
	cfg := testConfig(f.addr())
	cfg.MaxInFlight = 16
	cfg.MaxBatchSendAttempts = 2
	cfg.Checkpoint = true
	c := newClient(t, cfg)
	stored := map[int64]transport.Batch{3: batches(3)[0], 4: batches(4)[0]}
	_, again, err := c.Settle(sendCtx(t), []int64{3, 4}, func(id int64) (transport.Batch, bool) {
		b, ok := stored[id]
		return b, ok
	})
	if !errors.Is(err, transport.ErrUnsettled) || len(again) != 2 || again[0].Outcome != transport.Failed || again[1].Outcome != transport.NotSent {
		t.Fatalf("Settle = %+v, %v; want 3 Failed, 4 NotSent, ErrUnsettled", again, err)
	}
	if _, err := c.Send(sendCtx(t), seq(20, 1)); !errors.Is(err, transport.ErrUnsettled) {
		t.Fatalf("Send after the failed settle = %v, want ErrUnsettled", err)
	}
	mu.Lock()
	got := strings.Join(order, " ")
	mu.Unlock()
	if want := "__COMMIT__:3 __COMMIT__:4 __BATCH__:3 __BATCH__:3 __COMMIT__:3"; got != want {
		t.Fatalf("wire order\n got %s\nwant %s", got, want)
	}
}
