package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport"
)

// closeAfter, ending a pipeEngine reply, closes the connection once the
// reply is written.
const closeAfter = "<close-after>"

// pipeEngine is a scripted EdgeSocket peer over net.Pipe, for tests that
// run in a synctest bubble: every wait in the client then runs on the
// bubble's clock, so minutes pass at once and nothing is slept on. Replies
// are written synchronously, so scripts must keep one batch in flight.
type pipeEngine struct {
	respond func(conn int, line string) string
	// read, when set, receives every batch line as the engine reads it.
	read chan string

	mu     sync.Mutex
	conns  int
	lines  int  // batch lines read, all connections
	refuse bool // dials fail from now on
	open   []net.Conn
	wg     sync.WaitGroup
}

func (e *pipeEngine) dial(context.Context, string, string) (net.Conn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refuse {
		return nil, errors.New("connection refused (the test engine is gone)")
	}
	client, server := net.Pipe()
	e.open = append(e.open, server)
	e.wg.Add(1)
	go e.serve(e.conns, server)
	e.conns++
	return client, nil
}

func (e *pipeEngine) serve(idx int, c net.Conn) {
	defer e.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "__BATCH__:") {
			e.mu.Lock()
			e.lines++
			e.mu.Unlock()
			if e.read != nil {
				e.read <- line
			}
		}
		reply := "PENDING" // to a commit barrier; the scripts are for batches
		if !strings.HasPrefix(line, "__COMMIT__:") {
			reply = e.respond(idx, line)
		}
		if reply == silent {
			continue
		}
		reply, closeNow := strings.CutSuffix(reply, closeAfter)
		if _, err := c.Write([]byte(reply + "\n")); err != nil || closeNow {
			return
		}
	}
}

// stop closes every connection and waits for the engine's goroutines.
func (e *pipeEngine) stop() {
	e.mu.Lock()
	e.refuse = true
	for _, c := range e.open {
		_ = c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func (e *pipeEngine) batchLines() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lines
}

// pipeClient returns a client that dials e, with ReadTimeout 30s.
func pipeClient(t *testing.T, e *pipeEngine) *Client {
	t.Helper()
	cfg := testConfig("engine.test:9999")
	cfg.Dial = e.dial
	cfg.ReadTimeout = 30 * time.Second
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestQueueFullWaitIsCappedAtReadTimeout: QUEUE_FULL may ask for up to 10
// minutes; the client waits at most ReadTimeout before it looks again.
func TestQueueFullWaitIsCappedAtReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &pipeEngine{respond: scripted("QUEUE_FULL:600000", "RECEIVED")}
		defer e.stop()
		c := pipeClient(t, e)
		defer c.Close()
		// Far below the 10 minutes asked for, far above ReadTimeout.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		res, err := c.Send(ctx, batches(1))
		if err != nil || res[0].Outcome != transport.Received {
			t.Fatalf("Send = %+v, %v: the QUEUE_FULL wait was not capped at ReadTimeout", res, err)
		}
		if n := e.batchLines(); n != 2 {
			t.Fatalf("engine read %d batch lines, want 2 (the send and the resend)", n)
		}
	})
}

// TestQueueFullWaitRechecksTheConnection: an engine that goes away during
// the wait is noticed before the batch is written again, so the batch is
// not charged as written and unanswered.
func TestQueueFullWaitRechecksTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *pipeEngine
		e = &pipeEngine{respond: func(_ int, line string) string {
			if strings.HasPrefix(line, "__AUTH__:") {
				return "ACK"
			}
			e.mu.Lock()
			e.refuse = true // and it does not come back
			e.mu.Unlock()
			return "QUEUE_FULL:600000" + closeAfter
		}}
		defer e.stop()
		c := pipeClient(t, e)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		res, err := c.Send(ctx, batches(1))
		if !errors.Is(err, transport.ErrUnavailable) {
			t.Fatalf("Send error = %v, want ErrUnavailable once the capped wait found the engine gone", err)
		}
		if res[0].Outcome != transport.NotSent {
			t.Fatalf("result %+v, want NotSent: the batch was answered (QUEUE_FULL) and never written again", res[0])
		}
		if st := c.Stats(); st.BatchesSent != 1 {
			t.Fatalf("BatchesSent = %d, want 1: nothing may be written onto a connection found closed", st.BatchesSent)
		}
	})
}
