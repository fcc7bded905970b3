package codec

import (
	"bytes"
	"encoding/json"
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

// agentEvents returns n events shaped like the file connector's: the
// JSON object around one log line of 170..230 bytes, ~70 % plain text and
// ~30 % JSON (escaped inside "payload"), each with its own time stamp,
// sequence number and values. This is what the agent compresses, one
// event per packet; event and logLines are more repetitive.
func agentEvents(n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 3))
	comps := []string{"http", "worker-1", "worker-2", "worker-3", "db", "cache", "scheduler", "auth"}
	lvls := []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	msgs := []string{"request completed", "cache miss for key", "retrying upstream call", "connection reset by peer", "slow query detected", "job finished"}
	paths := []string{"/api/v1/items", "/api/v1/users", "/api/v2/orders", "/healthz", "/metrics"}
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua")
	out := make([][]byte, n)
	offset := 0
	for i := range out {
		var line strings.Builder
		target := 170 + r.IntN(61)
		ts := fmt.Sprintf("2025-01-15T10:%02d:%02d.%06dZ", i/60%60, i%60, r.IntN(1e6))
		if r.IntN(10) < 3 {
			fmt.Fprintf(&line, `{"ts":"%s","level":"%s","logger":"%s","msg":"%s","seq":"%09d","trace_id":"%016x","dur_ms":%d,"note":"`,
				ts, strings.ToLower(lvls[r.IntN(len(lvls))]), comps[r.IntN(len(comps))], msgs[r.IntN(len(msgs))], i+1, r.Uint64(), r.IntN(5000))
		} else {
			fmt.Fprintf(&line, "%s %-5s [%s] %s method=GET path=%s/%d status=%d dur_ms=%d seq=%09d msg=",
				ts, lvls[r.IntN(len(lvls))], comps[r.IntN(len(comps))], msgs[r.IntN(len(msgs))],
				paths[r.IntN(len(paths))], r.IntN(100000), 200+r.IntN(4), r.IntN(5000), i+1)
		}
		for line.Len() < target-3 {
			line.WriteString(words[r.IntN(len(words))])
			line.WriteByte(' ')
		}
		payload, _ := json.Marshal(line.String())
		out[i] = fmt.Appendf(nil, `{"_index":0,"_file":"/var/log/app/service.log","_line":%d,"_offset":%d,"_ts":%d,"payload":%s}`,
			i+1, offset, 1736935200000+int64(i), payload)
		offset += line.Len() + 1
	}
	return out
}

// BenchmarkEncodeAgentEvent is Encode at the default level on events like
// the agent's (agentEvents), cycling through 256 of them so branch
// predictors do not learn one; wire_B/event is the mean packet size.
func BenchmarkEncodeAgentEvent(b *testing.B) {
	evs := agentEvents(256, 1)
	for _, o := range []Options{
		{Mode: ModePacket, Compression: CompressionGzip, Level: DefaultLevel, Encryption: EncryptionAESGCM, Key: testKey},
		{Mode: ModePacket, Compression: CompressionGzip, Level: DefaultLevel},
		{Mode: ModePacket, Compression: CompressionNone, Encryption: EncryptionAESGCM, Key: testKey},
	} {
		b.Run(name(o), func(b *testing.B) {
			e := mustEncoder(b, o)
			b.ReportAllocs()
			var dst []byte
			var wire, in int
			i := 0
			for b.Loop() {
				ev := evs[i%len(evs)]
				i++
				var err error
				if dst, err = e.Encode(dst[:0], ev); err != nil {
					b.Fatal(err)
				}
				wire += len(dst)
				in += len(ev)
			}
			b.ReportMetric(float64(wire)/float64(i), "wire_B/event")
			b.ReportMetric(float64(in)/float64(i), "event_B")
		})
	}
}

// BenchmarkFixedAgentEvent is the level-1 deflate body alone on agentEvents.
func BenchmarkFixedAgentEvent(b *testing.B) {
	evs := agentEvents(256, 1)
	var f fixedDeflater
	var out []byte
	var wire, in, i int
	for b.Loop() {
		ev := evs[i%len(evs)]
		i++
		out = f.appendDeflate(out[:0], ev)
		wire += len(out)
		in += len(ev)
	}
	b.ReportMetric(float64(wire)/float64(i), "deflate_B/event")
	b.ReportMetric(float64(in)/float64(i), "event_B")
}
