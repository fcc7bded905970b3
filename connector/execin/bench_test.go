//go:build unix

package execin

import (
	"runtime"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// BenchmarkYes is the rate of lines through the input: `yes` with a
// 100-byte line floods stdout, a scheduler stand-in polls (no WAL); b.N
// counts lines. It reports lines/s and the heap in use at the end.
func BenchmarkYes(b *testing.B) {
	cfg := NewDefaultConfig()
	line := make([]byte, 100)
	for i := range line {
		line[i] = 'a' + byte(i%26)
	}
	cfg.Command = []string{"yes", string(line)}
	in, err := New(cfg, input.Settings{ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := in.Open(b.Context(), input.OpenOptions{}); err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	b.ResetTimer()
	start := time.Now()
	got := 0
	var dst []input.Event
	for got < b.N {
		dst, _ = in.Poll(b.Context(), dst[:0], 1024)
		got += len(dst)
		if len(dst) == 0 {
			<-in.Wakeup()
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "lines/s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
}
