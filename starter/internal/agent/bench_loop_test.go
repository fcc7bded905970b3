package agent

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// BenchmarkLoopOnly is BenchmarkEndToEnd without the network: a Sender that
// answers RECEIVED at once, so the figure is the loop plus the WAL.
// account=on adds agent.account's "_input"/"_seq" stamp to every row.
func BenchmarkLoopOnly(b *testing.B) {
	for _, c := range []struct {
		name           string
		fsync, account bool
	}{{"fsync=on", true, false}, {"fsync=off", false, false}, {"fsync=off,account=on", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := testConfig(b)
			cfg.Queue.Fsync = c.fsync
			cfg.Agent.Account = c.account
			cfg.Agent.BulkMaxSize = 1024
			cfg.Agent.FlushInterval = 100 * time.Millisecond
			cfg.Queue.PollBatchSize = 256
			snd := newFakeSender(nil)
			gen := &genInput{n: b.N}
			opts := newOptions(b, cfg, b.TempDir(), nil, snd)
			opts.Inputs = input.NewRegistry(fakeFactory{in: gen})
			opts.Logger = slog.New(slog.DiscardHandler)
			rt, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			b.ResetTimer()
			start := time.Now()
			go func() { done <- rt.Run(ctx) }()
			for rt.Snapshot().Acked < uint64(b.N) {
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(b.N)/float64(rt.Snapshot().Commits), "events/commit")
		})
	}
}
