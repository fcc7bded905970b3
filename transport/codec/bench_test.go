package codec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// event returns a log event of about size bytes shaped like the agent's
// RAW line format, with enough variety that compression is not trivial.
func event(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"_index":0,"_file":"/var/log/app/service.log","_line":1234,"_offset":567890,"_ts":1700000000000,"payload":"`)
	words := []string{"GET", "/api/v1/orders", "status=200", "user=42", "latency_ms=13", "trace=5f2c9a", "region=eu-west", "ok"}
	for i := 0; b.Len() < size-2; i++ {
		b.WriteString(words[(i*7+i/3)%len(words)])
		b.WriteByte(' ')
	}
	b.WriteString(`"}`)
	return []byte(b.String()[:size-2] + `"}`)
}

func benchOptions() []Options {
	return append([]Options{{Mode: ModeRaw}}, combos()...)
}

func benchName(o Options) string {
	if o.Mode == ModeRaw {
		return "raw"
	}
	return name(o)
}

// BenchmarkEncode reports MB/s of event bytes encoded, per core.
func BenchmarkEncode(b *testing.B) {
	for _, size := range []int{200, 4096} {
		ev := event(size)
		for _, o := range benchOptions() {
			b.Run(fmt.Sprintf("%s/%dB", benchName(o), size), func(b *testing.B) {
				e := mustEncoder(b, o)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				var dst []byte
				for b.Loop() {
					var err error
					if dst, err = e.Encode(dst[:0], ev); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEncodeLevel reports the cost of one ~200-byte event at each
// compression level, and what the level saves on the wire (wire_B/op):
// the figures behind DefaultLevel.
func BenchmarkEncodeLevel(b *testing.B) {
	ev := event(200)
	for _, e := range []Encryption{EncryptionNone, EncryptionAESGCM} {
		for l := 0; l <= 9; l++ {
			o := Options{Mode: ModePacket, Compression: CompressionGzip, Level: l, Encryption: e}
			if e != EncryptionNone {
				o.Key = testKey
			}
			b.Run(fmt.Sprintf("gzip+%s/level%d", e, l), func(b *testing.B) {
				enc := mustEncoder(b, o)
				b.SetBytes(int64(len(ev)))
				var dst []byte
				for b.Loop() {
					var err error
					if dst, err = enc.Encode(dst[:0], ev); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(dst)), "wire_B/op")
			})
		}
	}
}

// BenchmarkGzipBare is gzip alone on one ~200-byte event, next to
// BenchmarkEncodeLevel: klauspost with a new writer per event and with one
// writer Reset between events (the codec's way), and the fixed-Huffman
// path level 1 takes. The difference to BenchmarkEncodeLevel is the
// envelope, base64 and encryption.
func BenchmarkGzipBare(b *testing.B) {
	ev := event(200)
	// A new writer allocates and clears about a megabyte of state: the
	// cost the Encoder's pool avoids.
	b.Run("new/level1", func(b *testing.B) {
		var out bytes.Buffer
		for b.Loop() {
			out.Reset()
			w, err := gzip.NewWriterLevel(&out, 1)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.Write(ev); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(out.Len()), "wire_B/op")
	})
	for _, l := range []int{0, 1, 6, 9} {
		b.Run(fmt.Sprintf("reset/level%d", l), func(b *testing.B) {
			var out bytes.Buffer
			w, err := gzip.NewWriterLevel(&out, l)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				gzipReset(b, w, &out, ev)
			}
			b.ReportMetric(float64(out.Len()), "wire_B/op")
		})
	}
	b.Run("fixed/level1", func(b *testing.B) {
		var f fixedDeflater
		var out []byte
		for b.Loop() {
			out = f.appendFixed(CompressionGzip, out[:0], ev)
		}
		b.ReportMetric(float64(len(out)), "wire_B/op")
	})
}

// logLines returns n bytes of log lines that vary like real ones: time
// stamps, sequence numbers and values differ, words repeat. event is more
// repetitive, so it flatters compression.
func logLines(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	words := []string{"request", "served", "user", "order", "latency", "retry", "timeout", "payload", "GET", "POST", "/api/v1/orders", "/healthz", "status=200", "status=500", "db", "cache", "miss", "hit", "region=eu-west", "trace", "span", "queue", "worker", "started", "stopped", "connection", "reset", "by", "peer", "ok"}
	lv := []string{"INFO", "WARN", "ERROR", "DEBUG"}
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "2026-11-30T%02d:%02d:%02d.%03dZ %s [%s] seq=%09d", r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), lv[r.IntN(4)], words[r.IntN(len(words))], r.IntN(1e9))
		for range 4 + r.IntN(10) {
			b.WriteByte(' ')
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(3) == 0 {
				fmt.Fprintf(&b, "=%d", r.IntN(100000))
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:n]
}

// BenchmarkLevel1BySize compares level 1's two encoders on log lines of
// growing size: the fixed-Huffman block (fixed) and klauspost's dynamic
// blocks (dynamic); the figures behind fixedMaxInput.
func BenchmarkLevel1BySize(b *testing.B) {
	for _, size := range []int{200, 512, 1024, 2048, 4096} {
		ev := logLines(size, 1)
		b.Run(fmt.Sprintf("dynamic/%dB", size), func(b *testing.B) {
			var out bytes.Buffer
			w, err := gzip.NewWriterLevel(&out, 1)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			for b.Loop() {
				gzipReset(b, w, &out, ev)
			}
			b.ReportMetric(float64(out.Len()), "wire_B/op")
		})
		b.Run(fmt.Sprintf("fixed/%dB", size), func(b *testing.B) {
			var f fixedDeflater
			var out []byte
			b.SetBytes(int64(size))
			for b.Loop() {
				out = f.appendFixed(CompressionGzip, out[:0], ev)
			}
			b.ReportMetric(float64(len(out)), "wire_B/op")
		})
	}
}

// BenchmarkDecode reports MB/s of event bytes decoded, per core.
func BenchmarkDecode(b *testing.B) {
	for _, size := range []int{200, 4096} {
		ev := event(size)
		for _, o := range benchOptions() {
			b.Run(fmt.Sprintf("%s/%dB", benchName(o), size), func(b *testing.B) {
				wire, err := mustEncoder(b, o).Encode(nil, ev)
				if err != nil {
					b.Fatal(err)
				}
				d := mustDecoder(b, o.Mode, testKey)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := d.Decode(wire); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// gzipReset writes ev as one gzip stream into out with w, reset for it:
// the reuse the codec's pooled writers do.
func gzipReset(b *testing.B, w *gzip.Writer, out *bytes.Buffer, ev []byte) {
	out.Reset()
	w.Reset(out)
	if _, err := w.Write(ev); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
