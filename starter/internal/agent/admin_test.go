package agent

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// An operator's retry-dead on the running agent is made by the loop, which
// then sends the rows again at once: the loop's own idea of the queue
// follows the change.
func TestUpdateWALRunsInTheLoopAndResumesSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Retry.MaxAttempts = 1
		in := &fakeInput{}
		in.push(lineEvents("a.log", 0, 10)...)
		// The first send of each row is refused, so each goes DEAD; later
		// sends are received.
		snd := newFakeSender(func(_ transport.Batch, n int) transport.Outcome {
			if n == 0 {
				return transport.Failed
			}
			return transport.Received
		})
		h := startRuntime(t, newOptions(t, cfg, home, in, snd))
		transporttest.Eventually(t, 10*time.Second, "10 DEAD rows", func() bool { return h.rt.Snapshot().Queue.Dead == 10 })
		if h.rt.WAL() == nil {
			t.Fatal("no WAL while running")
		}
		// Past every retry backoff: the loop idles, expecting nothing due.
		time.Sleep(time.Minute)
		synctest.Wait()

		var moved int
		err := h.rt.UpdateWAL(context.Background(), func(tx *wal.Tx) error {
			var err error
			moved, err = tx.RetryDead(time.Now().UnixMilli())
			return err
		})
		if err != nil || moved != 10 {
			t.Fatalf("UpdateWAL = %d, %v; want 10 rows moved", moved, err)
		}
		transporttest.Eventually(t, 10*time.Second, "10 acks after retry-dead", func() bool { return h.rt.Snapshot().Acked == 10 })
		if st := h.rt.Snapshot(); st.Queue.Dead != 0 {
			t.Fatalf("DEAD after retry-dead and delivery: %d", st.Queue.Dead)
		}
		// A change the callback refuses is rolled back and reported.
		boom := errors.New("boom")
		if err := h.rt.UpdateWAL(context.Background(), func(*wal.Tx) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("UpdateWAL = %v, want boom", err)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if h.rt.WAL() != nil {
			t.Fatal("WAL still handed out after stop")
		}
		if err := h.rt.UpdateWAL(context.Background(), func(*wal.Tx) error { return nil }); !errors.Is(err, ErrNoWAL) {
			t.Fatalf("UpdateWAL after stop = %v, want ErrNoWAL", err)
		}
	})
}

func TestUpdateWALInNonMode(t *testing.T) {
	cfg := testConfig(t)
	cfg.Agent.Delivery = DeliveryNon
	h := startRuntime(t, newOptions(t, cfg, t.TempDir(), &fakeInput{}, newFakeSender(nil)))
	defer h.stop()
	if h.rt.WAL() != nil {
		t.Fatal("NON mode hands out a WAL")
	}
	if err := h.rt.UpdateWAL(context.Background(), func(*wal.Tx) error { return nil }); !errors.Is(err, ErrNoWAL) {
		t.Fatalf("UpdateWAL in NON mode = %v, want ErrNoWAL", err)
	}
}
