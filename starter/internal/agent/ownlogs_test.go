package agent

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/self"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// recordSink keeps every own log record shipped to it.
type recordSink struct {
	mu   sync.Mutex
	recs []string
}

func (s *recordSink) Offer(rec []byte) {
	s.mu.Lock()
	s.recs = append(s.recs, string(rec))
	s.mu.Unlock()
}

func (s *recordSink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.recs...)
}

// What delivery says about its failures reaches the log but is never
// shipped as the agent's own logs: those rows would go the same failing
// way (the self input's loop protection).
func TestDeliveryFailuresAreNotShipped(t *testing.T) {
	hub := self.NewHub()
	sink := &recordSink{}
	detach := hub.Attach(slog.LevelDebug, sink)
	defer detach()
	lines := newLineCounter()
	cfg := testConfig(t)
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 5)...)
	snd := newFakeSender(nil)
	snd.down = transport.ErrUnavailable
	opts := newOptions(t, cfg, t.TempDir(), in, snd)
	opts.Logger = slog.New(hub.Handler(lines))
	h := startRuntime(t, opts)
	transporttest.Eventually(t, 30*time.Second, "3 delivery failures logged", func() bool {
		return lines.count("output unavailable") >= 3
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	recs := sink.all()
	shipped := false
	for _, r := range recs {
		if strings.Contains(r, "output unavailable") {
			t.Fatalf("a delivery failure was shipped: %s", r)
		}
		shipped = shipped || strings.Contains(r, "BOOTSTRAP_READY")
	}
	if !shipped {
		t.Fatalf("the agent's other records were not shipped: %q", recs)
	}
}
