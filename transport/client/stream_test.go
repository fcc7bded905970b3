package client

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
)

// testFeed hands out segs in order, at most out of them not yet done at
// once.
type testFeed struct {
	segs  [][]transport.Batch
	out   int
	next  int // segs handed out
	done  [][]transport.Result
	errs  []error
	order []string
	// gate, when set, holds every segment after the first until closed.
	gate <-chan struct{}
}

func (f *testFeed) Next() []transport.Batch {
	if f.next == len(f.segs) || f.next-len(f.done) >= f.out {
		return nil
	}
	if f.gate != nil && f.next > 0 {
		select {
		case <-f.gate:
		default:
			return nil
		}
	}
	f.order = append(f.order, fmt.Sprintf("next %d", f.next))
	f.next++
	return f.segs[f.next-1]
}

func (f *testFeed) Done(results []transport.Result, err error) {
	f.order = append(f.order, fmt.Sprintf("done %d", len(f.done)))
	f.done = append(f.done, results)
	f.errs = append(f.errs, err)
}

// segmentsOf cuts ids 1..n into segments of per batches.
func segmentsOf(n, per int) [][]transport.Batch {
	var segs [][]transport.Batch
	for lo := 1; lo <= n; lo += per {
		var ids []int64
		for id := lo; id < lo+per && id <= n; id++ {
			ids = append(ids, int64(id))
		}
		segs = append(segs, batches(ids...))
	}
	return segs
}

// holdingEngine answers the batch lines before the first __COMMIT__ only
// once it has read that commit, and closes sawCommit then; it holds the
// commit's reply (and every reply behind it) until it has read the batch
// line of id releaseAt: a client that waits for that reply before sending
// the next segment never gets it.
func holdingEngine(t *testing.T, releaseAt string) (addr string, sawCommit <-chan struct{}) {
	return replyHoldingEngine(t, releaseAt, true)
}

// silentEngine answers nothing after AUTH until it has read the batch line
// of id releaseAt; it closes sawCommit once it has read the first commit.
func silentEngine(t *testing.T, releaseAt string) (addr string, sawCommit <-chan struct{}) {
	return replyHoldingEngine(t, releaseAt, false)
}

// replyHoldingEngine is holdingEngine, or silentEngine when answerAtCommit
// is false.
func replyHoldingEngine(t *testing.T, releaseAt string, answerAtCommit bool) (addr string, sawCommit <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	saw := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conn net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		if conn != nil {
			_ = conn.Close() // a client still waiting must not hold the engine up
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		conn = c
		mu.Unlock()
		defer c.Close()
		r := bufio.NewReader(c)
		var held []string
		holding, commits := true, 0
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			reply := "RECEIVED"
			switch {
			case strings.HasPrefix(line, "__AUTH__:"):
				_, _ = c.Write([]byte("ACK\n"))
				continue
			case strings.HasPrefix(line, "__COMMIT__:"):
				reply = "PENDING"
				commits++
				if commits == 1 {
					close(saw)
					if answerAtCommit {
						_, _ = c.Write([]byte(strings.Join(held, "")))
						held = nil
					}
				}
			case strings.HasPrefix(line, "__BATCH__:"+releaseAt+":"):
				if holding {
					_, _ = c.Write([]byte(strings.Join(held, "")))
					held, holding = nil, false
				}
			}
			if holding {
				held = append(held, reply+"\n")
				continue
			}
			_, _ = c.Write([]byte(reply + "\n"))
		}
	})
	return ln.Addr().String(), saw
}

// TestStreamSendsTheNextSegmentBeforeTheLastReplies: a segment taken
// while the one before awaits its replies goes out at once, in the same
// window, and the one before is done once its barrier is answered. The
// engine answers the first segment's barrier only after it read the
// second segment's first line: a call that waited for that reply first
// would time out and reconnect.
func TestStreamSendsTheNextSegmentBeforeTheLastReplies(t *testing.T) {
	addr, sawCommit := holdingEngine(t, "3")
	cfg := testConfig(addr)
	cfg.MaxInFlight = 64
	c := newClient(t, cfg)
	f := &testFeed{segs: segmentsOf(4, 2), out: 2, gate: sawCommit}
	if err := c.Stream(context.Background(), f); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if got := c.Stats().Reconnects; got != 0 {
		t.Fatalf("%d reconnects: the second segment waited for the first one's replies", got)
	}
	want := []string{"next 0", "next 1", "done 0", "done 1"}
	if strings.Join(f.order, ",") != strings.Join(want, ",") {
		t.Fatalf("feed calls %v, want %v", f.order, want)
	}
	checkSegments(t, f, 4, 2)
}

// checkSegments checks that every segment of f was done once, in order,
// with one RECEIVED result per batch and no error.
func checkSegments(t *testing.T, f *testFeed, n, per int) {
	t.Helper()
	if len(f.done) != len(f.segs) {
		t.Fatalf("%d segments done, want %d", len(f.done), len(f.segs))
	}
	id := int64(1)
	for s, res := range f.done {
		if f.errs[s] != nil {
			t.Fatalf("segment %d done with error %v", s, f.errs[s])
		}
		if len(res) != len(f.segs[s]) {
			t.Fatalf("segment %d: %d results for %d batches", s, len(res), len(f.segs[s]))
		}
		for _, r := range res {
			if r.ID != id || r.Outcome != transport.Received {
				t.Fatalf("segment %d: result %+v, want batch %d Received", s, r, id)
			}
			id++
		}
	}
	if id != int64(n)+1 {
		t.Fatalf("results for %d batches, want %d", id-1, n)
	}
}

// TestStreamAcrossRefusalsAndACut: a long stream (past the point where
// the call drops the segments it handed back) keeps every segment's
// results in order through QUEUE_FULL, RETRY and a connection cut, and
// no batch of it is lost.
func TestStreamAcrossRefusalsAndACut(t *testing.T) {
	const n, per = 3 * compactAt, 500
	var mu sync.Mutex
	seen := 0
	e := newFakeEngine(t, func(conn int, line string) string {
		if strings.HasPrefix(line, "__AUTH__:") {
			return "ACK"
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		switch {
		case seen == 2000 && conn == 0:
			return cut
		case seen%997 == 0:
			return "QUEUE_FULL:1"
		case seen%1499 == 0:
			return "RETRY"
		}
		return "RECEIVED"
	})
	cfg := testConfig(e.addr())
	cfg.MaxInFlight = 1024
	c := newClient(t, cfg)
	f := &testFeed{segs: segmentsOf(n, per), out: 4}
	if err := c.Stream(context.Background(), f); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	checkSegments(t, f, n, per)
	if c.Stats().Reconnects == 0 {
		t.Fatal("the engine's cut did not end a session")
	}
}

// TestStreamStoppedDoesEverySegmentLeft: a call that stops early hands
// back every segment it holds, with its error; batches never sent are
// NotSent.
func TestStreamStoppedDoesEverySegmentLeft(t *testing.T) {
	e := newFakeEngine(t, scripted())
	c := newClient(t, testConfig(e.addr()))
	_ = c.Close()
	f := &testFeed{segs: segmentsOf(4, 2), out: 2}
	err := c.Stream(context.Background(), f)
	if err == nil {
		t.Fatal("Stream after Close: no error")
	}
	if f.next == 0 || len(f.done) != f.next {
		t.Fatalf("done %d segments of the %d taken", len(f.done), f.next)
	}
	for s, res := range f.done {
		if f.errs[s] == nil {
			t.Fatalf("segment %d done without the call's error", s)
		}
		for _, r := range res {
			if r.Outcome != transport.NotSent {
				t.Fatalf("result %+v, want NotSent", r)
			}
		}
	}
}

// TestStreamRefusesCheckpointDelivery: see errStreamCheckpoint.
func TestStreamRefusesCheckpointDelivery(t *testing.T) {
	cfg := testConfig("127.0.0.1:1")
	cfg.Checkpoint = true
	c := newClient(t, cfg)
	f := &testFeed{segs: segmentsOf(2, 2), out: 1}
	if err := c.Stream(context.Background(), f); err == nil || f.next != 0 {
		t.Fatalf("Stream with checkpoint delivery: err %v, %d segments taken", err, f.next)
	}
}

// A round trip is timed only from a line written since the last reply
// was read: a line written before had waited on the wire meanwhile (a
// full window, a stream waiting for replies), and timing it from now
// measured a round trip far shorter than the link's.
func TestRoundTripNotTimedFromALineWrittenBeforeARead(t *testing.T) {
	engine, conn := net.Pipe()
	defer engine.Close()
	defer conn.Close()
	c := newClient(t, testConfig("127.0.0.1:1"))
	s := newSession(conn, conn)
	s.win = newWindow(1 << 10)
	k := newCall(batches(1, 2), &c.stats)
	k.ready = k.ready[:0]
	p := &pumpRun{c: c, ctx: context.Background(), s: s, k: k,
		inflight: []flight{{i: 0, end: 10}, {i: 1, end: 20}}}
	s.out.n = 20 // both lines are on the wire
	s.win.sent(10, time.Now())
	p.wrote = true // line 2 was written while line 1 was being timed
	go func() { _, _ = engine.Write([]byte("RECEIVED\n")) }()
	f, reply, err := p.next()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.onBatch(f, reply, false); err != nil {
		t.Fatal(err)
	}
	if s.win.probing() {
		t.Fatal("the reply to the timed line did not end its round trip")
	}
	p.timeRound()
	if s.win.probing() {
		t.Fatal("a round trip is timed from a line written before the last reply was read")
	}
}

// A stream takes one segment at a time, however many the feed has ready:
// the others wait with the feed, whose owner can still take them back
// unsent.
func TestStreamTakesOneSegmentAtATime(t *testing.T) {
	var stats counters
	f := &testFeed{segs: segmentsOf(6, 2), out: 3}
	k := &call{feed: f}
	if !k.pull(&stats) || f.next != 1 || len(k.ready) != 2 {
		t.Fatalf("pulled %d segments, %d batches ready; want the first segment only", f.next, len(k.ready))
	}
}

// TestWakeEndsAStreamsWaitForAReply: a feed whose owner announces its
// segments (Wake) gets them sent while the call waits for replies, with
// no look at the feed every few milliseconds: the look left is a
// backstop, here an hour, so only Wake can end the wait in time. The
// engine answers nothing until it has read the second segment.
func TestWakeEndsAStreamsWaitForAReply(t *testing.T) {
	addr, sawCommit := silentEngine(t, "3")
	cfg := testConfig(addr)
	cfg.MaxInFlight = 64
	cfg.ReadTimeout = 2 * time.Hour
	c := newClient(t, cfg)
	c.backstop = time.Hour
	c.Wake() // the feed's owner announces its segments
	ready := make(chan struct{})
	f := &testFeed{segs: segmentsOf(4, 2), out: 2, gate: ready}
	go func() {
		<-sawCommit
		close(ready)
		c.Wake()
	}()
	done := make(chan error, 1)
	go func() { done <- c.Stream(context.Background(), f) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the stream still waits for a reply: Wake did not end the wait")
	}
	checkSegments(t, f, 4, 2)
}
