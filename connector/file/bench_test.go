package file

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// Benchmarks read + split + format a generated file of ~200-byte lines,
// one whole file per iteration, and report lines/s, allocations per
// event and the heap in use after reading (it must not grow with the
// file). Run: go test -run '^$' -bench . -benchmem -cpu 1 ./file/
//
// The file is generated once into the OS temp directory and reused.

// benchFile returns a file of n lines; every 4th line starts a record
// (timestamp), the others look like stack-trace continuations.
func benchFile(b *testing.B, n int) string {
	b.Helper()
	return cachedBenchFile(b, fmt.Sprintf("lines-v2-%d.log", n), n, func(w *bufio.Writer) {
		writeBenchLines(w, n)
	})
}

// cachedBenchFile returns the file name of at least n lines in the
// benchmarks' directory, written by write the first time (through a
// temporary file, so an interrupted run leaves nothing half written).
func cachedBenchFile(b *testing.B, name string, n int, write func(w *bufio.Writer)) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "edge-agent-connector-bench")
	must(b, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, name)
	if fi, err := os.Stat(path); err == nil && fi.Size() > int64(n)*150 {
		return path
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	must(b, err)
	w := bufio.NewWriterSize(f, 1<<20)
	write(w)
	must(b, w.Flush())
	must(b, f.Close())
	must(b, os.Rename(tmp, path))
	return path
}

func writeBenchLines(w *bufio.Writer, n int) {
	pad := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for i := 0; i < n; i++ {
		if i%4 == 0 {
			fmt.Fprintf(w, "2024-05-17T10:%02d:%02d.%03dZ INFO  [worker-%d] com.example.Service - request id=%08d user=\"alice\" path=/api/v1/items status=200 took=%dms %s%s\n",
				i/60000%60, i/1000%60, i%1000, i%16, i, i%997, pad, pad[:i%20])
		} else {
			fmt.Fprintf(w, "\tat com.example.very.long.package.name.Handler%d.process(Handler.java:%d) ~[app.jar:1.2.3] caused by \"x\" at step %d %s%s\n",
				i%50, i%500, i%7, pad, pad[:i%30])
		}
	}
}

// benchFileMixed returns a file of n lines like the end-to-end
// benchmark's: 170 to 230 bytes, 70 % plain "ts LEVEL [component] seq=N
// words k=v", 30 % JSON objects (a quote every few bytes to escape).
func benchFileMixed(b *testing.B, n int) string {
	b.Helper()
	return cachedBenchFile(b, fmt.Sprintf("mixed-v1-%d.log", n), n, func(w *bufio.Writer) {
		must(b, writeMixedLines(w, n))
	})
}

func writeMixedLines(w *bufio.Writer, n int) error {
	words := []string{"request", "served", "user", "order", "latency", "retry", "timeout", "payload", "session", "queue"}
	levels := []string{"INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	var line []byte
	for i := 0; i < n; i++ {
		size := 170 + i*7919%61
		ts := 1_764_000_000_000 + int64(i)*3
		if i%10 < 3 {
			line = fmt.Appendf(line[:0], `{"ts":%d,"level":"%s","component":"worker-%d","seq":"%09d","msg":"`, ts, levels[i%5], i%6, i)
		} else {
			line = fmt.Appendf(line[:0], "%d %s [worker-%d] seq=%09d ", ts, levels[i%5], i%6, i)
		}
		for k := i; len(line) < size; k++ {
			if k%4 == 0 {
				line = fmt.Appendf(line, "k%d=%d ", k%100, k*31%100000)
			} else {
				line = append(append(line, words[k*13%len(words)]...), ' ')
			}
		}
		line = line[:size]
		if i%10 < 3 {
			line = append(line[:size-2], `"}`...)
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}

func benchRead(b *testing.B, lines int, mutate func(c *Config)) {
	benchReadFile(b, benchFile(b, lines), lines, 1024, mutate)
}

// benchReadFile reads the file at path, of the given lines, perPoll
// events per Poll.
func benchReadFile(b *testing.B, path string, lines, perPoll int, mutate func(c *Config)) {
	fi, err := os.Stat(path)
	must(b, err)
	cfg := NewDefaultConfig()
	cfg.Paths = []string{path}
	cfg.ReadFromBeginning = true
	cfg.UseFsnotify = false
	if mutate != nil {
		mutate(cfg)
	}
	var ms0, ms1 runtime.MemStats
	var heapAfter uint64
	var events, physical int64
	evs := make([]input.Event, 0, perPoll)
	ctx := context.Background()
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in, err := New(cfg, input.Settings{ID: "bench"})
		must(b, err)
		must(b, in.Open(ctx, input.OpenOptions{FirstStart: true}))
		for {
			evs, err = in.Poll(ctx, evs[:0], perPoll)
			must(b, err)
			if len(evs) == 0 {
				break
			}
			for j := range evs {
				if evs[j].Payload != nil {
					events++
				}
			}
		}
		events += int64(len(in.Drain(evs[:0])))
		physical += in.Stats().LinesRead
		if i == b.N-1 {
			b.StopTimer()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heapAfter = ms.HeapInuse
			b.StartTimer()
		}
		must(b, in.Close())
	}
	b.StopTimer()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	if physical != int64(lines)*int64(b.N) {
		b.Fatalf("read %d lines, want %d", physical, int64(lines)*int64(b.N))
	}
	b.SetBytes(fi.Size())
	b.ReportMetric(float64(physical)/elapsed.Seconds(), "lines/s")
	// CPU time of the whole process (reader + GC on every thread): the
	// per-core figure, independent of other load on a shared machine.
	b.ReportMetric(float64(physical)/cpu.Seconds(), "lines/cpu-s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(events), "allocs/event")
	b.ReportMetric(float64(heapAfter)/(1<<20), "heap-MB")
}

func BenchmarkReadSingleLine(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) { benchRead(b, n, nil) })
	}
}

// BenchmarkReadMixed reads lines like the end-to-end benchmark's, the
// mix the input's CPU per line is judged on, as many per Poll as the
// scheduler asks for by default (queue.poll-batch-size) and more.
func BenchmarkReadMixed(b *testing.B) {
	for _, perPoll := range []int{128, 1024} {
		b.Run(fmt.Sprintf("poll=%d", perPoll), func(b *testing.B) {
			benchReadFile(b, benchFileMixed(b, 200_000), 200_000, perPoll, nil)
		})
	}
}

func BenchmarkReadMultiline(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			benchRead(b, n, func(c *Config) { c.Multiline.Pattern = `^\d{4}-\d{2}-\d{2}` })
		})
	}
}

func BenchmarkReadNDJSONOutput(b *testing.B) {
	benchRead(b, 100_000, func(c *Config) { c.OutputFormat.Type = "json" })
}
