package client

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }

// TestPacerRules: the pacer's rules, on an injected clock.
func TestPacerRules(t *testing.T) {
	asked := 500 * time.Millisecond
	t.Run("unpaced before any QUEUE_FULL", func(t *testing.T) {
		var p pacer
		for i := range 10000 {
			if w := p.take(t0); w != 0 {
				t.Fatalf("row %d waits %v before any QUEUE_FULL", i, w)
			}
		}
	})
	t.Run("first QUEUE_FULL before any row: the asked pause", func(t *testing.T) {
		var p pacer
		if w := p.queueFull(t0, asked); w != asked {
			t.Fatalf("pause %v, want %v", w, asked)
		}
	})
	t.Run("first QUEUE_FULL: a short pause, still unpaced", func(t *testing.T) {
		var p pacer
		p.received()
		if w := p.queueFull(t0, asked); w != queueFullPause {
			t.Fatalf("pause %v, want %v", w, queueFullPause)
		}
		if w := p.take(ms(10)); w != 0 || p.rate != 0 {
			t.Fatalf("take = %v, rate %v: one episode measures nothing", w, p.rate)
		}
	})
	t.Run("the rows between two episodes are the drain rate", func(t *testing.T) {
		var p pacer
		p.queueFull(t0, asked)
		for range 470 {
			p.received()
		}
		if w := p.queueFull(ms(10), asked); w != queueFullPause {
			t.Fatalf("pause %v, want %v", w, queueFullPause)
		}
		want := 47000 * (1 + 1.0/paceHeadroom)
		if p.rate < want*0.999 || p.rate > want*1.001 {
			t.Fatalf("rate %v rows/s, want %v", p.rate, want)
		}
	})
	t.Run("an engine that took nothing is waited for as it asks", func(t *testing.T) {
		var p pacer
		p.received()
		p.queueFull(t0, asked)
		if w := p.queueFull(ms(5), asked); w != asked {
			t.Fatalf("pause %v, want the asked %v", w, asked)
		}
		if w := p.pause(asked); w != asked {
			t.Fatalf("a later reply of that episode: pause %v, want %v", w, asked)
		}
		p.received()
		if w := p.queueFull(ms(600), asked); w != queueFullPause {
			t.Fatalf("draining again: pause %v, want %v", w, queueFullPause)
		}
	})
	t.Run("no rows saved up over the pause", func(t *testing.T) {
		var p pacer
		p.rate = 10000
		w := p.queueFull(t0, asked)
		if got := p.take(t0.Add(w)); got == 0 {
			t.Fatal("a row went at once when the pause ended: the pause was saved up as a burst")
		}
	})
}

// TestPacerRate: a paced sender asking as fast as it is let sends at its
// rate, in bursts of at most paceBurst, and raises the rate by
// 1/paceGrowth per paceProbe without a QUEUE_FULL.
func TestPacerRate(t *testing.T) {
	for _, rate := range []float64{500, 47000, 300000} {
		t.Run(strconv.FormatFloat(rate, 'f', -1, 64), func(t *testing.T) {
			p := pacer{rate: rate, last: t0}
			now, sent := t0, 0
			end := t0.Add(paceProbe * 9 / 10) // before the first rise
			for now.Before(end) {
				if w := p.take(now); w > 0 {
					if w < paceQuantum/2 && rate*paceQuantum.Seconds() >= 1 {
						t.Fatalf("wait %v: shorter than a quantum", w)
					}
					now = now.Add(w)
					continue
				}
				sent++
			}
			want := rate * now.Sub(t0).Seconds()
			if float64(sent) > want+rate*paceBurst.Seconds()+1 || float64(sent) < want-rate*paceQuantum.Seconds()-1 {
				t.Fatalf("sent %d rows in %v at %v rows/s, want about %.0f", sent, now.Sub(t0), rate, want)
			}
			if p.rate != rate {
				t.Fatalf("rate %v before a probe's worth of rows, want %v", p.rate, rate)
			}
			for p.rate == rate && now.Before(t0.Add(time.Minute)) {
				if w := p.take(now); w > 0 {
					now = now.Add(w)
				}
			}
			if got, want := p.rate, rate*(1+1.0/paceGrowth); got != want {
				t.Fatalf("rate after a probe %v, want %v", got, want)
			}
		})
	}
}

// drainingEngine is the engine's source (enginemodel) with a sink
// draining it at rate rows/s of the bubble's clock, over net.Pipe; its
// replies go out through their own goroutine so a window of lines can be
// in flight.
type drainingEngine struct {
	src     *enginemodel.Source
	rate    float64
	start   time.Time
	drained int

	// refuseEvery > 0 answers every refuseEvery-th batch line
	// QUEUE_FULL:5 whatever the queue holds, as a fault would.
	refuseEvery int

	mu               sync.Mutex
	batches, refused int
	wg               sync.WaitGroup
	conn             net.Conn
}

func (e *drainingEngine) dial(context.Context, string, string) (net.Conn, error) {
	client, server := net.Pipe()
	e.conn = server
	replies := make(chan string, 1<<16)
	e.wg.Add(2)
	go func() {
		defer e.wg.Done()
		for r := range replies {
			if _, err := server.Write([]byte(r + "\n")); err != nil {
				return
			}
		}
	}()
	go func() {
		defer e.wg.Done()
		defer close(replies)
		r := bufio.NewReader(server)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			replies <- e.answer(strings.TrimSuffix(line, "\n"))
		}
	}()
	return client, nil
}

func (e *drainingEngine) answer(line string) string {
	switch {
	case strings.HasPrefix(line, "__AUTH__:"):
		return "ACK"
	case strings.HasPrefix(line, "__COMMIT__:"):
		return "PENDING"
	}
	// The sink took its share of the time passed.
	for due := int(e.rate * time.Since(e.start).Seconds()); e.drained < due; e.drained++ {
		if _, ok := e.src.Poll(); !ok {
			e.drained = due // an idle sink does not save up
		}
	}
	req, err := protocol.ParseRequest([]byte(line))
	if err != nil {
		return "BAD_REQUEST"
	}
	e.mu.Lock()
	e.batches++
	e.mu.Unlock()
	if e.refuseEvery > 0 && e.batches%e.refuseEvery == 0 {
		return protocol.QueueFullPrefix + "5"
	}
	reply := e.src.Batch(req.BatchID, req.Payload)
	e.mu.Lock()
	if strings.HasPrefix(reply, protocol.QueueFullPrefix) {
		e.refused++
	}
	e.mu.Unlock()
	return reply
}

// TestSendKeepsADrainingQueueUnderItsMark: against the engine's queue at
// its defaults (1024 records, QUEUE_FULL from 922, asking for 500 ms)
// drained at 47,000 rows/s, a sender that always has rows keeps the sink
// busy (the rows take little more than the sink's own time) and is
// refused QUEUE_FULL for at most 1 % of its batch lines beyond its first
// window. Waiting the
// 500 ms the engine asks for would leave the sink idle most of the time.
func TestSendKeepsADrainingQueueUnderItsMark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, err := enginemodel.NewSource(enginemodel.SourceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		const rate, n = 47000, 100000
		e := &drainingEngine{src: src, rate: rate, start: time.Now()}
		cfg := testConfig("engine.test:9999")
		cfg.Dial = e.dial
		cfg.MaxInFlight = 1024
		cfg.ReadTimeout = 30 * time.Second
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := c.Send(ctx, batches(ids...))
		took := time.Since(e.start)
		c.Close()
		e.wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Outcome != transport.Received {
				t.Fatalf("batch %d: %+v", i, r)
			}
		}
		// The queue holds 922 rows before the first refusal: the rest
		// pass at the sink's pace.
		sinkTime := time.Duration(n-922) * time.Second / rate
		if took > sinkTime*110/100 {
			t.Errorf("%d rows took %v, the sink's own time is %v: the sink stood idle", n, took, sinkTime)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		// The first episode costs up to a window of lines whatever the
		// client does: it cannot know the mark before it is reached.
		if e.refused > e.batches/100+cfg.MaxInFlight {
			t.Errorf("%d of %d batch lines answered QUEUE_FULL, want at most 1 %% and the first window", e.refused, e.batches)
		}
		t.Logf("%d rows in %v (sink %v), %d of %d batch lines refused", n, took, sinkTime, e.refused, e.batches)
	})
}

// An engine answering QUEUE_FULL:5 to every 5th batch line whatever its
// queue holds (a fault, not a queue at its mark) must not have the
// sender's own pauses measured as its drain, cycle after cycle, down to
// a crawl: the sender stays within twice the time of one try per 5 ms
// for every line it writes (refusals included), as obeying would take.
func TestPacingNeverSlowerThanAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, err := enginemodel.NewSource(enginemodel.SourceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		const n = 1000
		e := &drainingEngine{src: src, rate: 1e6, start: time.Now(), refuseEvery: 5}
		cfg := testConfig("engine.test:9999")
		cfg.Dial = e.dial
		cfg.MaxInFlight = 16
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		res, err := c.Send(ctx, batches(ids...))
		took := time.Since(e.start)
		c.Close()
		e.wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Outcome != transport.Received {
				t.Fatalf("batch %d: %+v", i, r)
			}
		}
		if limit := 2 * (n + n/4) * 5 * time.Millisecond; took > limit {
			t.Errorf("%d rows took %v, more than twice one line per the 5 ms the engine asked (%v)", n, took, limit)
		}
		t.Logf("%d rows in %v", n, took)
	})
}
