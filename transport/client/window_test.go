package client

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

func TestWindow(t *testing.T) {
	type step struct {
		op      string // "rx" (RECEIVED while limited), "idle" (RECEIVED, not limited), "qf" (QUEUE_FULL)
		n       int    // how many times
		end     int64  // qf: end of the answered line
		handed  int64  // qf: stream written so far
		want    int    // size after
		wantThr int    // threshold after (0: not checked)
	}
	tests := []struct {
		name  string
		max   int
		steps []step
	}{
		{"starts at 64", 1024, []step{{op: "idle", n: 1, want: 64}}},
		{"starts at the cap when lower", 8, []step{{op: "idle", n: 1, want: 8}, {op: "rx", n: 100, want: 8}}},
		{"max-in-flight 1 never moves", 1, []step{{op: "rx", n: 1000, want: 1}, {op: "qf", n: 1, end: 10, handed: 10, want: 1}}},
		{"grows only while it is the limit", 1024, []step{{op: "idle", n: 500, want: 64}, {op: "rx", n: 10, want: 74}}},
		{"doubles per round trip, up to the cap", 1024, []step{{op: "rx", n: 64, want: 128}, {op: "rx", n: 128, want: 256}, {op: "rx", n: 5000, want: 1024}}},
		{"QUEUE_FULL halves once per episode", 1024, []step{
			{op: "rx", n: 192, want: 256},
			{op: "qf", n: 1, end: 100, handed: 500, want: 128, wantThr: 128},
			{op: "qf", n: 1, end: 400, handed: 600, want: 128},             // written before the cut: same episode
			{op: "qf", n: 1, end: 501, handed: 700, want: 64, wantThr: 64}, // written after: a new one
		}},
		{"beyond the threshold, one line per window of replies", 1024, []step{
			{op: "rx", n: 192, want: 256},
			{op: "qf", n: 1, end: 1, handed: 1, want: 128},
			{op: "rx", n: 127, want: 128},
			{op: "rx", n: 1, want: 129},
			{op: "rx", n: 129, want: 130},
		}},
		{"never below one", 1024, []step{
			{op: "qf", n: 1, end: 1, handed: 1, want: 32}, {op: "qf", n: 1, end: 2, handed: 2, want: 16},
			{op: "qf", n: 1, end: 3, handed: 3, want: 8}, {op: "qf", n: 1, end: 4, handed: 4, want: 4},
			{op: "qf", n: 1, end: 5, handed: 5, want: 2}, {op: "qf", n: 1, end: 6, handed: 6, want: 1},
			{op: "qf", n: 1, end: 7, handed: 7, want: 1, wantThr: 1}, {op: "rx", n: 1, want: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(tt.max)
			for i, s := range tt.steps {
				for range s.n {
					switch s.op {
					case "rx":
						w.received(true, 0, time.Time{})
					case "idle":
						w.received(false, 0, time.Time{})
					case "qf":
						w.queueFull(s.end, s.handed)
					}
				}
				if w.size != s.want || (s.wantThr != 0 && w.threshold != s.wantThr) {
					t.Fatalf("step %d (%s ×%d): size %d threshold %d, want %d %d", i, s.op, s.n, w.size, w.threshold, s.want, s.wantThr)
				}
			}
		})
	}
}

// slowEngine answers every batch line RECEIVED a round trip after it read
// it, as an engine at the end of a long link does, and counts the lines
// it has read but not yet answered: what is in flight.
type slowEngine struct {
	rtt time.Duration

	mu       sync.Mutex
	inFlight int
	peak     int
	batches  int
}

type dueReply struct {
	at   time.Time
	line string
}

func (e *slowEngine) serve(conn net.Conn) {
	replies := make(chan dueReply, 1<<16)
	go func() {
		defer conn.Close()
		for r := range replies {
			time.Sleep(time.Until(r.at))
			e.mu.Lock()
			if r.line == "RECEIVED" {
				e.inFlight--
			}
			e.mu.Unlock()
			if _, err := conn.Write([]byte(r.line + "\n")); err != nil {
				return
			}
		}
	}()
	defer close(replies)
	sc := bufio.NewScanner(conn)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "__AUTH__:") {
			replies <- dueReply{at: time.Now(), line: "ACK"}
			continue
		}
		if strings.HasPrefix(sc.Text(), "__COMMIT__:") {
			replies <- dueReply{at: time.Now().Add(e.rtt), line: "PENDING"}
			continue
		}
		e.mu.Lock()
		e.inFlight++
		e.batches++
		e.peak = max(e.peak, e.inFlight)
		e.mu.Unlock()
		replies <- dueReply{at: time.Now().Add(e.rtt), line: "RECEIVED"}
	}
}

// The window grows past its first 64 lines when the round trip, not the
// engine, is the limit, and stays within max-in-flight; 1 stays 1. The
// clock is synctest's: the round trip costs no real time, and nothing
// here depends on how fast the machine is.
func TestLongRoundTripFillsTheWindow(t *testing.T) {
	tests := []struct {
		maxInFlight int
		wantMin     int // the engine's peak in flight is at least this
	}{
		{1, 1},
		{64, 64},
		{1024, 1024},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("max-in-flight=%d", tt.maxInFlight), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 5000
				e := &slowEngine{rtt: 100 * time.Millisecond}
				cfg := testConfig("engine:1")
				cfg.ReadTimeout = time.Minute
				cfg.MaxInFlight = tt.maxInFlight
				cfg.Dial = func(context.Context, string, string) (net.Conn, error) {
					ours, theirs := net.Pipe()
					go e.serve(theirs)
					return ours, nil
				}
				c, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				res, err := c.Send(context.Background(), seq(1, n))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					if r.Outcome != transport.Received {
						t.Fatalf("batch %d: %v", r.ID, r.Outcome)
					}
				}
				_ = c.Close()
				synctest.Wait()
				e.mu.Lock()
				defer e.mu.Unlock()
				if e.batches != n {
					t.Fatalf("engine read %d batch lines, want %d (no resends on a healthy link)", e.batches, n)
				}
				if e.peak < tt.wantMin || e.peak > tt.maxInFlight {
					t.Fatalf("engine saw at most %d lines in flight, want %d..%d", e.peak, tt.wantMin, tt.maxInFlight)
				}
				if st := c.Stats(); st.PeakInFlight != e.peak || st.Window > tt.maxInFlight {
					t.Fatalf("Stats: peak %d window %d; the engine saw a peak of %d", st.PeakInFlight, st.Window, e.peak)
				}
			})
		})
	}
}

// Through a real loopback link with a 20 ms round trip (DelayProxy), the
// client keeps more than the old fixed 64 lines in flight. Counts only:
// how long it took is not checked.
func TestDelayProxyGetsMoreThan64InFlight(t *testing.T) {
	f := newFakeEngine(t, scripted())
	p := transporttest.NewDelayProxy(t, f.addr(), 20*time.Millisecond)
	cfg := testConfig(p.Addr())
	cfg.MaxInFlight = DefaultConfig().MaxInFlight
	c := newClient(t, cfg)
	res, err := c.Send(sendCtx(t), seq(1, 3000))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("batch %d: %v", r.ID, r.Outcome)
		}
	}
	if st := c.Stats(); st.PeakInFlight <= initialWindow || st.PeakInFlight > cfg.MaxInFlight {
		t.Fatalf("peak in flight %d, want more than %d and at most %d", st.PeakInFlight, initialWindow, cfg.MaxInFlight)
	}
}

// An engine whose queue is full (QUEUE_FULL, or RETRY) shrinks the window
// below where it started, and every batch still arrives.
func TestFullEngineShrinksTheWindow(t *testing.T) {
	for _, reply := range []string{"QUEUE_FULL:1", "RETRY"} {
		t.Run(reply, func(t *testing.T) {
			script := make([]string, 100)
			for i := range script {
				script[i] = reply
			}
			f := newFakeEngine(t, scripted(script...))
			cfg := testConfig(f.addr())
			cfg.MaxInFlight = 1024
			c := newClient(t, cfg)
			res, err := c.Send(sendCtx(t), seq(1, 500))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Outcome != transport.Received {
					t.Fatalf("batch %d: %v", r.ID, r.Outcome)
				}
			}
			if st := c.Stats(); st.Window >= initialWindow || st.Window < 1 {
				t.Fatalf("window %d after 100 %s replies, want below the initial %d", st.Window, reply, initialWindow)
			}
		})
	}
}

// A commit barrier never holds the window back: once the window has
// grown, a call of one window's worth of batches takes one round trip,
// barriers and all (it took two while a barrier waited for a reply
// before the window filled again). The clock is synctest's.
func TestBarriersKeepTheWindowFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = 100 * time.Millisecond
		e := &slowEngine{rtt: rtt}
		cfg := testConfig("engine:1")
		cfg.ReadTimeout = time.Minute
		cfg.MaxInFlight = 1024
		cfg.Dial = func(context.Context, string, string) (net.Conn, error) {
			ours, theirs := net.Pipe()
			go e.serve(theirs)
			return ours, nil
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Send(context.Background(), seq(1, 20000)); err != nil { // the window grows to 1024
			t.Fatal(err)
		}
		if w := c.Stats().Window; w != 1024 {
			t.Fatalf("window %d after the warm-up, want 1024", w)
		}
		start := time.Now()
		if _, err := c.Send(context.Background(), seq(20001, 1024)); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > rtt+rtt/2 {
			t.Fatalf("1024 batches in a window of 1024 took %v, want about one round trip (%v)", took, rtt)
		}
	})
}
