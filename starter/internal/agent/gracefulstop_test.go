package agent

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// mutedEngine accepts the token, reads batch lines and never answers
// them, as an engine busy when the agent is told to stop.
type mutedEngine struct {
	ln   net.Listener
	read chan struct{} // one value per batch line read
	mu   sync.Mutex
	open []net.Conn
	wg   sync.WaitGroup
}

func startMutedEngine(t *testing.T) *mutedEngine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &mutedEngine{ln: ln, read: make(chan struct{}, 1024)}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.open = append(e.open, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go e.serve(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		e.mu.Lock()
		for _, c := range e.open {
			_ = c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *mutedEngine) serve(c net.Conn) {
	defer e.wg.Done()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if strings.HasPrefix(line, "__AUTH__:") {
			if _, err := c.Write([]byte("ACK\n")); err != nil {
				return
			}
			continue
		}
		select {
		case e.read <- struct{}{}:
		default:
		}
	}
}

// TestGracefulStopChargesNoAttemptForInFlightRows: rows whose batches are
// on the wire, unanswered, when the agent stops go back to PENDING with
// no attempt charged. Only the engine's refusal or a failed connection
// may bring a row closer to DEAD.
func TestGracefulStopChargesNoAttemptForInFlightRows(t *testing.T) {
	eng := startMutedEngine(t)
	cfg := transportConfig(t, eng.ln.Addr().String())
	clientOptions(t, cfg).ReadTimeout = time.Minute // the engine stays silent for the whole test
	cfg.Retry.MaxAttempts = 1                       // one charged attempt would make a row DEAD
	home := t.TempDir()
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 20)...)
	h := startRuntime(t, ingressOptions(t, cfg, home, in))
	select {
	case <-eng.read:
	case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
		t.Fatal("the engine read no batch line")
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	w := openTestWAL(t, home)
	var rows []wal.Row
	if err := w.View(func(tx *wal.ReadTx) (err error) { rows, err = tx.List(nil, 0, 0); return err }); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 20 {
		t.Fatalf("WAL holds %d rows, want 20", len(rows))
	}
	for _, r := range rows {
		if r.Status != wal.StatusPending || r.Attempts != 0 {
			t.Fatalf("row %d: status %v attempts %d (%s), want PENDING with 0 attempts after a graceful stop",
				r.ID, r.Status, r.Attempts, r.Reason)
		}
	}
}
