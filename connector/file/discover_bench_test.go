package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
)

// makeTree creates n one-line files of 1.2 KB (longer than the default
// fingerprint, so each file's fingerprint is full) spread over
// directories of 1,000 files each, as a large log tree looks.
func makeTree(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	pad := strings.Repeat("x", 1200)
	for i := 0; i < n; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			must(tb, os.MkdirAll(sub, 0o755))
		}
		must(tb, os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%06d.log", i)), fmt.Appendf(nil, "file %d line 1 %s\n", i, pad), 0o644))
	}
	return dir
}

// BenchmarkDiscover measures Open (the first scan: what stands between a
// start and BOOTSTRAP_READY) over trees of 10k and 100k matched files,
// and the first pass of polls that reads one line from every file with
// the default max-open-files. It reports the heap in use with every file
// tracked and the process's peak RSS. Run one case alone for a
// meaningful RSS: go test -run '^$' -bench 'Discover$/files=100000$/start=tail$' -benchtime 1x ./file/
func BenchmarkDiscover(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		// start: a first start reads from the beginning, or tails every
		// file from its last line (the default).
		for _, start := range []string{"beginning", "tail"} {
			b.Run(fmt.Sprintf("files=%d/start=%s", n, start), func(b *testing.B) {
				dir := makeTree(b, n)
				cfg := NewDefaultConfig()
				cfg.Paths = []string{filepath.Join(dir, "**", "*.log")}
				cfg.ReadFromBeginning = start == "beginning"
				cfg.UseFsnotify = false
				ctx := context.Background()
				var heap uint64
				for b.Loop() {
					in, err := New(cfg, input.Settings{ID: "bench"})
					must(b, err)
					must(b, in.Open(ctx, input.OpenOptions{FirstStart: true}))
					b.StopTimer()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					heap = ms.HeapInuse
					b.StartTimer()
					must(b, in.Close())
				}
				b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
				// Peak RSS of the whole test process; meaningful when one
				// sub-benchmark runs alone.
				if mb, ok := peakRSSMB(); ok {
					b.ReportMetric(mb, "maxrss-MB")
				}
			})
		}
	}
}

// BenchmarkDiscoverAndRead adds reading every file once after Open, with
// max-open-files far below the number of files, so closed files are
// reopened and others evicted.
func BenchmarkDiscoverAndRead(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := makeTree(b, n)
			cfg := NewDefaultConfig()
			cfg.Paths = []string{filepath.Join(dir, "**", "*.log")}
			cfg.ReadFromBeginning = true
			cfg.UseFsnotify = false
			ctx := context.Background()
			evs := make([]input.Event, 0, 4096)
			for b.Loop() {
				in, err := New(cfg, input.Settings{ID: "bench"})
				must(b, err)
				must(b, in.Open(ctx, input.OpenOptions{FirstStart: true}))
				lines := 0
				for idle := 0; idle < 2; {
					evs, err = in.Poll(ctx, evs[:0], 4096)
					must(b, err)
					if len(evs) == 0 {
						idle++
					}
					for j := range evs {
						if evs[j].Payload != nil {
							lines++
						}
					}
				}
				if lines != n {
					b.Fatalf("read %d lines, want %d", lines, n)
				}
				must(b, in.Close())
			}
		})
	}
}
