package codec

import (
	"fmt"
	"strings"
	"testing"
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
