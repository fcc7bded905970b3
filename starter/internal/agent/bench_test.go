package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// genInput produces n events of about 150 bytes as fast as it is polled,
// like a file input with a large backlog.
type genInput struct {
	n, next int
}

func (g *genInput) Open(context.Context, input.OpenOptions) error { return nil }
func (g *genInput) Drain(dst []input.Event) []input.Event         { return dst }
func (g *genInput) Close() error                                  { return nil }
func (g *genInput) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	for i := 0; i < max && g.next < g.n; i++ {
		g.next++
		p := fmt.Appendf(nil, `{"_index":0,"_file":"/var/log/app/bench.log","_line":%d,"_offset":%d,"_ts":1700000000000,"payload":"GET /api/v1/items?id=%d 200 12ms"}`, g.next, g.next*150, g.next)
		dst = append(dst, input.Event{Payload: p, Pos: input.Position{Key: "bench.log", State: fmt.Appendf(nil, "%d", g.next)}})
	}
	return dst, nil
}

// BenchmarkEndToEndGenerated is BenchmarkEndToEnd with a generator in
// place of the file input: the scheduler, WAL and transport alone.
func BenchmarkEndToEndGenerated(b *testing.B) {
	for _, inflight := range []int{1, 64} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			benchEndToEnd(b, inflight, 0, func(_ *testCfg, opts *Options) {
				opts.Inputs = input.NewRegistry(fakeFactory{in: &genInput{n: b.N}})
			})
		})
	}
}

func benchEndToEnd(b *testing.B, inflight int, rtt time.Duration, setInput func(*testCfg, *Options)) {
	var received atomic.Int64
	srv, err := standin.New(standin.Config{
		Token:   testToken,
		Handler: func(int64, []byte) { received.Add(1) },
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()

	addr := srv.Addr()
	if rtt > 0 {
		addr = transporttest.NewDelayProxy(b, addr, rtt).Addr()
	}
	cfg := transportConfig(b, addr)
	cfg.Queue.Fsync = true
	clientOptions(b, cfg).MaxInFlight = inflight
	cfg.Agent.BulkMaxSize = 1024
	cfg.Agent.FlushInterval = 100 * time.Millisecond
	cfg.Queue.PollBatchSize = 256
	opts := newOptions(b, cfg, b.TempDir(), nil, nil)
	opts.IDs = IDs{Agent: "a", Input: "bench", Output: "o"}
	opts.Logger = slog.New(slog.DiscardHandler)
	setInput(cfg, &opts)
	rt, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- rt.Run(ctx) }()
	for received.Load() < int64(b.N) || rt.Snapshot().Acked < uint64(b.N) {
		select {
		case err := <-done:
			b.Fatalf("Run ended early: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/float64(max(1, rt.Snapshot().Commits)), "events/commit")
	b.ReportMetric(0, "ns/op")
}
