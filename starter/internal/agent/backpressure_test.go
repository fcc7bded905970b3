package agent

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// lineCounter is a slog handler that counts records by message prefix.
type lineCounter struct {
	mu    *sync.Mutex
	lines map[string]int
}

func newLineCounter() lineCounter { return lineCounter{mu: &sync.Mutex{}, lines: map[string]int{}} }

func (c lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c lineCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.lines[r.Message]++
	c.mu.Unlock()
	return nil
}
func (c lineCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c lineCounter) WithGroup(string) slog.Handler      { return c }

func (c lineCounter) count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for msg, k := range c.lines {
		if strings.HasPrefix(msg, prefix) {
			n += k
		}
	}
	return n
}

// pacedSender answers one Send per token; closing tokens lets every Send
// through.
type pacedSender struct {
	tokens chan struct{}
}

func (s *pacedSender) Send(ctx context.Context, batches []transport.Batch) ([]transport.Result, error) {
	out := make([]transport.Result, len(batches))
	for i, b := range batches {
		out[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent}
	}
	select {
	case <-s.tokens:
	case <-ctx.Done():
		return out, ctx.Err()
	}
	for i := range out {
		out[i].Outcome = transport.Received
	}
	return out, nil
}

func (s *pacedSender) Close() error { return nil }

// A slow engine acking one job at a time while more input waits: the queue
// hovers at queue.max-bytes, and each ack used to resume the input for one
// read that paused it again, two log lines per ack. Input now resumes once
// the queue is a quarter below the limit: one pause and one resume line
// for the whole episode.
func TestBackpressureLogsOncePerTransition(t *testing.T) {
	cfg := testConfig(t)
	cfg.Agent.BulkMaxSize = 10
	cfg.Queue.PollBatchSize = 10
	clientOptions(t, cfg).MaxInFlight = 1
	cfg.Queue.MaxBytes = 100_000
	in := &fakeInput{}
	events := bigEvents("a.log", 0, 120) // ~1 KiB each: pauses at 100 rows
	in.push(events...)
	snd := &pacedSender{tokens: make(chan struct{})}
	lines := newLineCounter()
	opts := newOptions(t, cfg, t.TempDir(), in, snd)
	opts.Logger = slog.New(lines)
	h := startRuntime(t, opts)
	transporttest.Eventually(t, 10*time.Second, "backpressure", func() bool { return h.rt.Snapshot().Backpressure })
	// Slow engine: one job at a time, each ack committed before the next.
	var acked uint64
	for range 3 {
		snd.tokens <- struct{}{}
		transporttest.Eventually(t, 10*time.Second, "an ack", func() bool { return h.rt.Snapshot().Acked > acked })
		acked = h.rt.Snapshot().Acked
	}
	close(snd.tokens)
	transporttest.Eventually(t, 10*time.Second, "120 acks", func() bool { return h.rt.Snapshot().Acked == 120 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	pauses, resumes := lines.count("queue above queue.max-bytes"), lines.count("queue back under")
	if pauses != 1 || resumes != 1 {
		t.Fatalf("%d pause and %d resume lines for one backpressure episode, want 1 and 1", pauses, resumes)
	}
}
