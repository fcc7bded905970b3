package wal

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// logLines returns n log lines of about 200 bytes like bench-e2e's: a
// timestamp, a level, a component, a sequence number and words with
// key=value pairs, deterministic.
func logLines(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"request", "served", "user", "order", "latency", "retry", "timeout", "payload", "session", "queue"}
	out := make([][]byte, n)
	for i := range out {
		l := strconv.AppendInt(nil, 1_764_000_000_000+int64(i)*3, 10)
		l = append(l, " INFO [http] seq="...)
		l = fmt.Appendf(l, "%09d ", i)
		for len(l) < 170+rng.IntN(60) {
			if rng.IntN(4) == 0 {
				l = fmt.Appendf(l, "k%d=%d ", rng.IntN(100), rng.IntN(100000))
			} else {
				l = append(l, words[rng.IntN(len(words))]...)
				l = append(l, ' ')
			}
		}
		out[i] = l
	}
	return out
}

// BenchmarkBlockCodec compares the compressors a block could use on a
// group of 256 log lines: CPU per row to compress, and stored bytes per
// payload byte. s2 is what encodeBlock uses.
func BenchmarkBlockCodec(b *testing.B) {
	lines := logLines(256)
	var raw []byte
	for _, l := range lines {
		raw = append(raw, l...)
	}
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	defer zenc.Close()
	codecs := []struct {
		name string
		enc  func([]byte) []byte
	}{
		{"none", func(p []byte) []byte { return append([]byte(nil), p...) }},
		{"s2", func(p []byte) []byte { return s2.Encode(nil, p) }},
		{"zstd-fastest", func(p []byte) []byte { return zenc.EncodeAll(p, nil) }},
	}
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				out = c.enc(raw)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/row")
			b.ReportMetric(float64(len(out))/float64(len(raw)), "stored-B/payload-B")
		})
	}
}
