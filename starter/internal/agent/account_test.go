package agent

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/account"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// auditSent audits every distinct payload the sender saw.
func auditSent(t *testing.T, senders ...*fakeSender) account.Report {
	t.Helper()
	var b strings.Builder
	for _, s := range senders {
		for p := range s.payloads() {
			b.WriteString(p)
			b.WriteByte('\n')
		}
	}
	rep, err := account.Audit(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// With agent.account, an outage under when-full: drop-oldest, then a
// restart on the same WAL: every row delivered carries "_input" and a
// "_seq" that goes on across the restart, every row dropped is covered by
// a gap record, and the audit of what the engine got finds 1..produced
// covered exactly once. A payload that is not a JSON object takes no
// number.
func TestAccountAddsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, more, maxBytes = 200, 30, 20_000
		home := t.TempDir()
		cfg := testConfig(t)
		cfg.Agent.Account = true
		cfg.Agent.BulkMaxSize = 5
		cfg.Queue.PollBatchSize = 5
		cfg.Queue.MaxBytes = maxBytes
		cfg.Queue.WhenFull = WhenFullDropOldest
		clientOptions(t, cfg).MaxInFlight = 1
		in := &fakeInput{}
		in.push(bigEvents("a.log", 0, n)...)
		in.push(input.Event{Payload: []byte(`"not an object"`), Pos: input.Position{Key: "a.log", State: []byte("x")}})
		snd := newFakeSender(nil)
		snd.gate = make(chan struct{})
		h := startRuntime(t, newOptions(t, cfg, home, in, snd))
		transporttest.Eventually(t, time.Minute, "all read", func() bool { return in.left() == 0 })
		synctest.Wait()
		if st := h.rt.Snapshot(); st.Drops.FullRows == 0 {
			t.Fatalf("no row dropped: %+v", st.Drops)
		}
		close(snd.gate)
		transporttest.Eventually(t, time.Minute, "backlog delivered", func() bool {
			st := h.rt.Snapshot()
			return st.Queue.Pending == 0 && st.Queue.Sending == 0
		})
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}

		in2 := &fakeInput{}
		in2.push(bigEvents("a.log", n, n+more)...)
		snd2 := newFakeSender(nil) // the first one is closed
		h = startRuntime(t, newOptions(t, cfg, home, in2, snd2))
		transporttest.Eventually(t, time.Minute, "the rows after the restart delivered", func() bool {
			st := h.rt.Snapshot()
			return in2.left() == 0 && st.Queue.Pending == 0 && st.Queue.Sending == 0 && st.EventsRead == more
		})
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		rep := auditSent(t, snd, snd2)
		if !rep.OK() || len(rep.Streams) != 1 || rep.Unstamped != 1 {
			t.Fatalf("audit: %+v", rep)
		}
		s := rep.Streams[0]
		if s.Max != n+more || s.Rows+s.GapRows != n+more || s.Duplicates != 0 || s.GapRows == 0 || s.Input == "" {
			t.Fatalf("stream %+v: want %d produced = rows + gap rows, each once, some dropped", s, n+more)
		}
		t.Logf("%d rows delivered, %d accounted for by %d gap records", s.Rows, s.GapRows, s.GapRecords)
	})
}

func TestAccountNeedsTheWAL(t *testing.T) {
	s := DefaultSettings()
	s.Account, s.Delivery = true, DeliveryNon
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "account") {
		t.Fatalf("Validate: %v, want a problem naming account", err)
	}
}
