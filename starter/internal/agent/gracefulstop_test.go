package agent

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport/transporttest"
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

// TestGracefulStopWaitsForTheRepliesOnTheWire: a stop while a job is in
// flight lets the engine answer it before the sender is stopped, so rows
// the engine received are ACKED and not sent again at the next start. A
// job handed over but not begun is taken back unsent, and an engine that
// answers too late, or never, does not hold the stop past
// agent.shutdown-timeout-ms: those rows go back to PENDING uncharged.
func TestGracefulStopWaitsForTheRepliesOnTheWire(t *testing.T) {
	const rows = 20
	for _, tc := range []struct {
		name      string
		delay     time.Duration // how long the engine takes to answer
		block     bool          // the engine never answers
		jobRows   int           // rows per job; 0: all rows in one job
		wantAcked int           // the others must be PENDING, never sent
	}{
		{"engine answers within the settle", 500 * time.Millisecond, false, 0, rows},
		{"a job not begun is not sent during the stop", 500 * time.Millisecond, false, rows / 2, rows / 2},
		{"engine answers after the shutdown timeout", time.Hour, false, 0, 0},
		{"engine never answers", 0, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)      // agent.shutdown-timeout-ms: 5 s
				cfg.Retry.MaxAttempts = 1 // one charged attempt would make a row DEAD
				if tc.jobRows > 0 {
					// jobSize: the largest of these three (max-in-flight x 4).
					cfg.Queue.PollBatchSize, cfg.Agent.BulkMaxSize = tc.jobRows, tc.jobRows
					clientOptions(t, cfg).MaxInFlight = 1
				}
				home := t.TempDir()
				in := &fakeInput{}
				in.push(lineEvents("a.log", 0, rows)...)
				snd := newFakeSender(nil)
				snd.delay, snd.block, snd.started = tc.delay, tc.block, make(chan struct{}, 1)
				h := startRuntime(t, newOptions(t, cfg, home, in, snd))
				transporttest.Eventually(t, 10*time.Second, "every row appended", func() bool { return h.rt.Snapshot().RowsAppended == rows })
				<-snd.started
				synctest.Wait() // the loop has handed over every job it may
				h.cancel()
				// h.wait's bound runs on the bubble's clock: more than the
				// shutdown timeout means the stop was not bounded.
				if err := h.wait(cfg.Agent.ShutdownTimeout + time.Second); err != nil {
					t.Fatal(err)
				}
				var left []wal.Row
				w := openTestWAL(t, home)
				if err := w.View(func(tx *wal.ReadTx) (err error) { left, err = tx.List(nil, 0, 0); return err }); err != nil {
					t.Fatal(err)
				}
				if acked := h.rt.Snapshot().Acked; acked != uint64(tc.wantAcked) || len(left) != rows-tc.wantAcked {
					t.Fatalf("after the stop: %d acked, %d rows left in the WAL; want %d acked, %d left", acked, len(left), tc.wantAcked, rows-tc.wantAcked)
				}
				for _, r := range left {
					if r.Status != wal.StatusPending || r.Attempts != 0 {
						t.Fatalf("row %d: status %v attempts %d (%s), want PENDING with 0 attempts", r.ID, r.Status, r.Attempts, r.Reason)
					}
				}
				if distinct, total := snd.stats(); distinct != tc.wantAcked || total != tc.wantAcked {
					t.Fatalf("the engine answered %d sends of %d rows, want %d of %d: a row was sent that the stop did not wait for", total, distinct, tc.wantAcked, tc.wantAcked)
				}
			})
		})
	}
}
