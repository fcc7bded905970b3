package agent

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/journald"
	"github.com/edge-agent/edge-agent/connector/journald/journaltest"
)

// benchJournalEntries is the size of the journal BenchmarkJournaldToWAL
// reads. systemd-journal-remote writes about 20,000 entries/s, so the
// journal is built once per run of the benchmark (b.Loop runs its body
// once), not per iteration.
const benchJournalEntries = 100_000

// BenchmarkJournaldToWAL reads a prepared journal of 100,000 entries from
// its beginning through the journald input (journalctl --output=export),
// the loop and the WAL (fsync on) to a sender that acknowledges at once,
// and reports entries/s. Each iteration reads the whole journal into a new
// WAL.
//
//	go test -run '^$' -bench JournaldToWAL -count 3 ./internal/agent/
func BenchmarkJournaldToWAL(b *testing.B) {
	tools := journaltest.Tools(b)
	dir := b.TempDir()
	var export []byte
	for i := range benchJournalEntries {
		export = journaltest.AppendExport(export, journaltest.NewEntry(i, "app.service",
			fmt.Sprintf("GET /api/v1/items?id=%d 200 12ms", i)))
	}
	tools.WriteExport(b, filepath.Join(dir, "bench.journal"), export)
	var elapsed time.Duration
	for b.Loop() {
		elapsed += journaldOnce(b, dir)
	}
	b.ReportMetric(float64(b.N*benchJournalEntries)/elapsed.Seconds(), "entries/s")
}

func journaldOnce(b *testing.B, dir string) time.Duration {
	cfg := testConfig(b)
	cfg.Queue.Fsync = true
	cfg.Agent.BulkMaxSize = 1024
	cfg.Agent.FlushInterval = 100 * time.Millisecond
	cfg.Queue.PollBatchSize = 256
	jc := journald.NewDefaultConfig()
	jc.Directory, jc.ReadFromBeginning = dir, true
	cfg.InputType, cfg.Input = journald.TypeName, jc
	opts := newOptions(b, cfg, b.TempDir(), nil, newFakeSender(nil))
	opts.Inputs = input.NewRegistry(journald.NewFactory())
	opts.Logger = slog.New(slog.DiscardHandler)
	rt, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- rt.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Minute)
	for rt.Snapshot().Acked < benchJournalEntries {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d entries after 5 min", rt.Snapshot().Acked, benchJournalEntries)
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return elapsed
}
