package client

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/edge-agent/edge-agent/transport"
)

// These tests drive the client against engines that break the one reply
// per request rule. Whatever the engine does, a batch the engine never
// read must never be reported Received: that row would be acked and
// deleted although it never arrived.

// logBuffer collects what the client logs, for any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// withLog makes cfg log into a buffer the test can read.
func withLog(cfg *Config) *logBuffer {
	lb := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return lb
}

// protocolErrorLogged reports whether the client logged, at ERROR, that
// the engine broke the reply protocol.
func protocolErrorLogged(log string) bool {
	for l := range strings.Lines(log) {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, "broke the reply protocol") {
			return true
		}
	}
	return false
}

func seq(from, n int64) []transport.Batch {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = from + int64(i)
	}
	return batches(ids...)
}

// checkReceivedWereRead fails for every batch reported Received that the
// engine never read. Call it after the engine drained.
func checkReceivedWereRead(t *testing.T, f *fakeEngine, results ...[]transport.Result) {
	t.Helper()
	read := f.batchIDs()
	received, unread := 0, 0
	for _, res := range results {
		for _, r := range res {
			if r.Outcome != transport.Received {
				continue
			}
			received++
			if read[r.ID] == 0 {
				unread++
				if unread <= 5 {
					t.Errorf("batch %d reported Received, but the engine never read it", r.ID)
				}
			}
		}
	}
	if unread > 0 {
		t.Fatalf("%d of %d batches reported Received were never read by the engine (it read %d distinct batches)",
			unread, received, len(read))
	}
}

func TestUnsolicitedReplyAfterACKAcksNothing(t *testing.T) {
	for _, inflight := range []int{1, 64} {
		t.Run(fmt.Sprintf("inflight=%d", inflight), func(t *testing.T) {
			// The engine answers auth with ACK and, in the same write, a
			// RECEIVED that answers nothing. It then answers each batch.
			f := newFakeEngine(t, func(_ int, line string) string {
				if strings.HasPrefix(line, "__AUTH__:") {
					return "ACK\nRECEIVED"
				}
				return "RECEIVED"
			})
			cfg := testConfig(f.addr())
			cfg.MaxInFlight = inflight
			lb := withLog(&cfg)
			c := newClient(t, cfg)
			res, err := c.Send(sendCtx(t), seq(1, 2000))
			_ = c.Close()
			f.drain()
			checkReceivedWereRead(t, f, res)
			// Every session is out of step from its first line: nothing
			// can be delivered, and nothing is charged an attempt.
			if !errors.Is(err, transport.ErrUnavailable) || !errors.Is(err, transport.ErrProtocol) {
				t.Fatalf("Send error = %v, want ErrUnavailable caused by ErrProtocol", err)
			}
			for _, r := range res {
				if r.Outcome != transport.NotSent {
					t.Fatalf("result %+v, want NotSent (no batch line was answered)", r)
				}
			}
			if n := f.batchLines(); n != 0 {
				t.Fatalf("engine read %d batch lines from sessions it had already put out of step, want 0", n)
			}
			if !protocolErrorLogged(lb.String()) {
				t.Fatalf("no ERROR naming the engine's misbehaviour in the log:\n%s", lb.String())
			}
		})
	}
}

func TestDoubledRepliesAckOnlyWhatTheEngineRead(t *testing.T) {
	for _, inflight := range []int{1, 64} {
		t.Run(fmt.Sprintf("inflight=%d", inflight), func(t *testing.T) {
			const n = 2000
			answered := make(chan int, 4*n) // connection of each batch line answered
			f := newFakeEngine(t, func(conn int, line string) string {
				if strings.HasPrefix(line, "__AUTH__:") {
					return "ACK"
				}
				if strings.HasPrefix(line, fmt.Sprintf("__BATCH__:%d:", n)) {
					answered <- conn
				}
				return "RECEIVED\nRECEIVED"
			})
			cfg := testConfig(f.addr())
			cfg.MaxInFlight = inflight
			cfg.MaxReconnectCycles = 16
			lb := withLog(&cfg)
			c := newClient(t, cfg)
			// Every session goes out of step at its first barrier at
			// the latest: the outcomes held until then are taken back,
			// so nothing is reported Received that the engine did not
			// read, and nothing is charged an attempt.
			res, err := c.Send(sendCtx(t), seq(1, n))
			_ = c.Close()
			f.drain()
			close(answered)
			checkReceivedWereRead(t, f, res)
			if !errors.Is(err, transport.ErrUnavailable) || !errors.Is(err, transport.ErrProtocol) {
				t.Fatalf("Send error = %v, want ErrUnavailable caused by ErrProtocol", err)
			}
			for _, r := range res {
				if r.Outcome != transport.NotSent {
					t.Fatalf("result %+v, want NotSent: no barrier balanced", r)
				}
			}
			if st := c.Stats(); st.Violations == 0 {
				t.Fatalf("stats %+v: no violation counted", st)
			}
			if !protocolErrorLogged(lb.String()) {
				t.Fatalf("no ERROR naming the engine's misbehaviour in the log:\n%s", lb.String())
			}
		})
	}
}

func TestSurplusRepliesAfterACutAreAViolation(t *testing.T) {
	for _, inflight := range []int{1, 64} {
		t.Run(fmt.Sprintf("inflight=%d", inflight), func(t *testing.T) {
			// Connection 0 cuts at batch 5. Connection 1 answers the
			// first line it reads twice, as an engine replaying the reply
			// it owed on the cut connection would. Later ones behave.
			var mu sync.Mutex
			first := true
			f := newFakeEngine(t, func(conn int, line string) string {
				switch {
				case strings.HasPrefix(line, "__AUTH__:"):
					return "ACK"
				case conn == 0 && strings.HasPrefix(line, "__BATCH__:5:"):
					return cut
				case conn == 1:
					mu.Lock()
					defer mu.Unlock()
					if first {
						first = false
						return "RECEIVED\nRECEIVED"
					}
				}
				return "RECEIVED"
			})
			cfg := testConfig(f.addr())
			cfg.MaxInFlight = inflight
			lb := withLog(&cfg)
			c := newClient(t, cfg)
			res, err := c.Send(sendCtx(t), seq(1, 10))
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			// The surplus reply is either caught during the call or
			// waits, unread, for the next one.
			more, err := c.Send(sendCtx(t), seq(11, 1))
			if err != nil {
				t.Fatalf("second Send: %v", err)
			}
			_ = c.Close()
			f.drain()
			checkReceivedWereRead(t, f, res, more)
			for _, r := range append(res, more...) {
				if r.Outcome != transport.Received {
					t.Fatalf("result %+v, want Received once a well-behaved session took over", r)
				}
			}
			if f.accepts() != 3 {
				t.Fatalf("engine accepted %d connections, want 3: the out-of-step one must be replaced", f.accepts())
			}
			if !protocolErrorLogged(lb.String()) {
				t.Fatalf("no ERROR naming the engine's misbehaviour in the log:\n%s", lb.String())
			}
		})
	}
}

// TestProtocolViolationChargesNoAttempt: a batch on the wire when the
// engine broke the protocol is not the row's fault, so giving up leaves it
// NotSent, where a cut connection would have charged it.
func TestProtocolViolationChargesNoAttempt(t *testing.T) {
	// Connection 0 answers batch 1 and, in the same write, starts a
	// second reply that it completes only after reading batch 2: a reply
	// begun before batch 2 was on the wire cannot be batch 2's. Later
	// connections are refused at auth, so the call gives up.
	f := newFakeEngine(t, func(conn int, line string) string {
		switch {
		case strings.HasPrefix(line, "__AUTH__:") && conn == 0:
			return "ACK"
		case strings.HasPrefix(line, "__AUTH__:"):
			return "NOPE"
		case strings.HasPrefix(line, "__BATCH__:1:"):
			return "RECEIVED\nRECEI" + noNewline
		}
		return "VED"
	})
	cfg := testConfig(f.addr())
	lb := withLog(&cfg)
	c := newClient(t, cfg)
	res, err := c.Send(sendCtx(t), batches(1, 2))
	_ = c.Close()
	f.drain()
	checkReceivedWereRead(t, f, res)
	if !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Send error = %v, want ErrUnavailable", err)
	}
	// Batch 1's RECEIVED was held for a barrier that never balanced.
	if res[0].Outcome != transport.NotSent {
		t.Fatalf("batch 1: %+v, want NotSent: its reply was never proved in step", res[0])
	}
	if res[1].Outcome != transport.NotSent {
		t.Fatalf("batch 2: %+v, want NotSent: the engine's protocol violation must not charge it an attempt", res[1])
	}
	if !protocolErrorLogged(lb.String()) {
		t.Fatalf("no ERROR naming the engine's misbehaviour in the log:\n%s", lb.String())
	}
}
