package agent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/input"
)

// BenchmarkEndToEnd moves b.N lines from a file through the file input,
// the WAL (fsync on) and the EdgeSocket client to a loopback ingress, and
// reports events/s. The inflight variants show what pipelining buys; rtt
// puts a link with that round-trip time between agent and ingress.
//
//	go test -run '^$' -bench EndToEnd -benchtime 200000x -count 5 ./internal/agent/
func BenchmarkEndToEnd(b *testing.B) {
	for _, bc := range []struct {
		inflight int
		rtt      time.Duration
	}{
		{1, 0}, {64, 0}, {1, 2 * time.Millisecond}, {64, 2 * time.Millisecond},
	} {
		b.Run(fmt.Sprintf("inflight=%d/rtt=%v", bc.inflight, bc.rtt), func(b *testing.B) {
			dir := b.TempDir()
			writeBenchFile(b, filepath.Join(dir, "bench.log"), b.N)
			benchEndToEnd(b, bc.inflight, bc.rtt, func(cfg *testCfg, opts *Options) {
				fileConfig(b, cfg, dir)
				opts.InputList = []InputSpec{singleInput(cfg.InputType, cfg.Input)}
				opts.Inputs = input.NewRegistry(file.NewFactory())
			})
		})
	}
}

func writeBenchFile(b *testing.B, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "2024-05-01T12:00:00.000Z INFO  [worker-%d] GET /api/v1/items?id=%d 200 12ms\n", i%8, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
