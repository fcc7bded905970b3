package codec

import (
	"bytes"
	stdflate "compress/flate"
	stdgzip "compress/gzip"
	stdzlib "compress/zlib"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// noise returns n bytes that do not repeat, seeded so a failure replays.
func noise(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// fixedInputs are the shapes the fixed-Huffman path must get right: the
// edges of the matcher (too short to search, runs past the longest match,
// distance 1), the largest input it takes, bytes coded in 9 bits, and
// input that does not compress at all (stored instead).
func fixedInputs() map[string][]byte {
	return map[string][]byte{
		"empty":          {},
		"one byte":       {'x'},
		"three bytes":    []byte("abc"),
		"four repeated":  []byte("aaaa"),
		"run":            bytes.Repeat([]byte{'a'}, fixedMaxInput),
		"log event":      event(200),
		"largest event":  event(fixedMaxInput),
		"high bytes":     bytes.Repeat([]byte{0xc3, 0xa9, 0xff, 0x90}, fixedMaxInput/4),
		"every byte":     bytes.Repeat(everyByte(), fixedMaxInput/256),
		"noise":          noise(fixedMaxInput, 1),
		"noise then rep": append(noise(fixedMaxInput/2, 2), noise(fixedMaxInput/2, 2)...),
		"json lines":     []byte(strings.Repeat(`{"level":"info","msg":"served","status":200}`+"\n", 20)),
	}
}

// everyByte returns the 256 byte values in order.
func everyByte() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// stdDecompress inflates with the standard library: a decoder written
// independently of klauspost's, as the engine's java.util.zip is.
func stdDecompress(t *testing.T, c Compression, b []byte) []byte {
	t.Helper()
	var r io.Reader
	var err error
	switch c {
	case CompressionGzip:
		r, err = stdgzip.NewReader(bytes.NewReader(b))
	case CompressionZlib:
		r, err = stdzlib.NewReader(bytes.NewReader(b))
	case CompressionDeflate:
		r = stdflate.NewReader(bytes.NewReader(b))
	}
	if err != nil {
		t.Fatalf("%s header: %v", c, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	return out
}

func TestFixedDeflateRoundTrip(t *testing.T) {
	var f fixedDeflater
	var d decompressor
	for name, in := range fixedInputs() {
		for _, c := range []Compression{CompressionGzip, CompressionZlib, CompressionDeflate} {
			t.Run(fmt.Sprintf("%s/%s", name, c), func(t *testing.T) {
				if len(in) > fixedMaxInput {
					t.Fatalf("input of %d bytes is past fixedMaxInput", len(in))
				}
				out := f.appendFixed(c, []byte("prefix"), in)
				if !bytes.HasPrefix(out, []byte("prefix")) {
					t.Fatal("appendFixed overwrote what dst held")
				}
				out = out[len("prefix"):]
				if got := stdDecompress(t, c, out); !bytes.Equal(got, in) {
					t.Fatalf("standard library inflated %d different bytes", len(got))
				}
				got, err := d.decompress(c, out, len(in))
				if err != nil || !bytes.Equal(got, in) {
					t.Fatalf("codec decompressor: %v", err)
				}
				// Never worse than a stored block (5 bytes of header).
				if body := f.appendDeflate(nil, in); len(body) > len(in)+5 {
					t.Fatalf("deflate body %d bytes for %d input bytes", len(body), len(in))
				}
			})
		}
	}
}

// TestFixedDeflateEveryCode makes a match of every length at distances on
// both sides of each distance code's bounds, so every length code and
// every distance code an input of fixedMaxInput can reach, with their
// extra bits, go through a decoder.
func TestFixedDeflateEveryCode(t *testing.T) {
	dists := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 24, 25, 32, 33, 48, 49, 64, 65, 96, 97,
		128, 129, 192, 193, 256, 257, 384, 385, 512, 513, 768, 769, fixedMaxInput - fixedMinMatch - 1}
	var f fixedDeflater
	for _, dist := range dists {
		for length := fixedMinMatch; length <= fixedMaxMatch; length++ {
			if dist+length+1 > fixedMaxInput {
				continue
			}
			// dist bytes of noise, repeated for length bytes, then a byte
			// that ends the match.
			base := noise(dist, uint64(dist))
			in := append([]byte(nil), base...)
			for i := range length {
				in = append(in, base[i%dist])
			}
			in = append(in, ^in[len(in)-dist])
			out := f.appendFixed(CompressionDeflate, nil, in)
			if got := stdDecompress(t, CompressionDeflate, out); !bytes.Equal(got, in) {
				t.Fatalf("length %d distance %d: inflated %d different bytes", length, dist, len(got))
			}
		}
	}
}

// TestLevel1SmallEventIsFixedBlock pins the fast path: at level 1 an event
// up to fixedMaxInput is one fixed-Huffman block, a larger one goes to
// klauspost's dynamic blocks, and other levels are not affected.
func TestLevel1SmallEventIsFixedBlock(t *testing.T) {
	// BTYPE of the first block (RFC 1951 §3.2.3); klauspost ends its
	// streams with an empty stored block, so BFINAL is not compared.
	const (
		fixedBlock   = 0b01
		dynamicBlock = 0b10
	)
	tests := []struct {
		name  string
		level int
		event []byte
		want  byte
	}{
		{"level 1, log event", 1, event(200), fixedBlock},
		{"level 1, largest fixed", 1, event(fixedMaxInput), fixedBlock},
		{"level 1, past fixedMaxInput", 1, event(fixedMaxInput + 1), dynamicBlock},
		{"level 6, log event", 6, event(200), dynamicBlock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s compressor
			out, err := s.compress(CompressionDeflate, tt.level, tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if got := out[0] >> 1 & 0b11; got != tt.want {
				t.Fatalf("first block type %02b, want %02b", got, tt.want)
			}
			if got := stdDecompress(t, CompressionDeflate, out); !bytes.Equal(got, tt.event) {
				t.Fatal("round trip differs")
			}
		})
	}
}

func FuzzFixedDeflate(f *testing.F) {
	for _, in := range fixedInputs() {
		f.Add(in)
	}
	var fd fixedDeflater
	f.Fuzz(func(t *testing.T, in []byte) {
		in = in[:min(len(in), fixedMaxInput)]
		for _, c := range []Compression{CompressionGzip, CompressionZlib, CompressionDeflate} {
			out := fd.appendFixed(c, nil, in)
			if got := stdDecompress(t, c, out); !bytes.Equal(got, in) {
				t.Fatalf("%s: inflated %d different bytes", c, len(got))
			}
		}
	})
}

// TestDelimiterMarks checks the word-at-a-time delimiter scan against a
// byte-by-byte one for every input length up to fixedMaxInput and inputs dense and
// sparse in delimiters: a wrong mark would not corrupt the output, only
// lose matches, so round trips cannot catch it.
func TestDelimiterMarks(t *testing.T) {
	inputs := map[string][]byte{
		"log event":  event(fixedMaxInput),
		"all spaces": bytes.Repeat([]byte{' '}, fixedMaxInput),
		"quotes":     bytes.Repeat([]byte(`a"b c\"`), fixedMaxInput/7+1)[:fixedMaxInput],
		"log lines":  logLines(fixedMaxInput, 5),
		"every byte": bytes.Repeat(everyByte(), fixedMaxInput/256),
		"noise":      noise(fixedMaxInput, 3),
	}
	for name, in := range inputs {
		for n := 8; n <= len(in); n++ {
			src := in[:n]
			for j := 0; j < n; j += 64 {
				var want uint64
				for k, c := range src[j:min(n, j+64)] {
					if c < '0' || ':' <= c && c <= '@' {
						want |= 1 << k
					}
				}
				if got := delimiterWord(src, j); got != want {
					t.Fatalf("%s, %d bytes, from %d: marks %064b, want %064b", name, n, j, got, want)
				}
			}
		}
	}
}

// TestFixedDeflateCompresses pins that level 1 still compresses, on both
// of its search paths: log events (searched at delimiters) come out
// smaller than their literals alone would, and input without delimiters
// (searched densely) still shrinks when it repeats.
func TestFixedDeflateCompresses(t *testing.T) {
	var f fixedDeflater
	tests := []struct {
		name string
		in   [][]byte
		// maxRatio bounds deflate bytes over input bytes; literals alone
		// take 1 byte per ASCII byte plus the block's 10 bits.
		maxRatio float64
	}{
		{"agent events", agentEvents(64, 7), 0.97},
		{"json lines", [][]byte{[]byte(strings.Repeat(`{"level":"info","msg":"served","status":200}`+"\n", 20))}, 0.2},
		// Within 5 % of searching every position, which gives 0.657.
		{"multi-line log text", [][]byte{logLines(fixedMaxInput, 1)}, 0.69},
		{"run without delimiters", [][]byte{bytes.Repeat([]byte{'a'}, fixedMaxInput)}, 0.05},
		{"repeated noise", [][]byte{append(noise(fixedMaxInput/2, 2), noise(fixedMaxInput/2, 2)...)}, 0.6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, out := 0, 0
			for _, ev := range tt.in {
				b := f.appendDeflate(nil, ev)
				if got := stdDecompress(t, CompressionDeflate, b); !bytes.Equal(got, ev) {
					t.Fatal("round trip differs")
				}
				in += len(ev)
				out += len(b)
			}
			if ratio := float64(out) / float64(in); ratio > tt.maxRatio {
				t.Fatalf("deflate %d bytes for %d input bytes (%.3f), want at most %.3f", out, in, ratio, tt.maxRatio)
			}
		})
	}
}

// TestFixedDeflatePastMaxInput: the level-1 path takes at most
// fixedMaxInput bytes, but BenchmarkLevel1BySize measures the fixed block
// on up to 4 KiB, so larger inputs (distances past the precomputed table)
// must still be encoded correctly.
func TestFixedDeflatePastMaxInput(t *testing.T) {
	var f fixedDeflater
	for _, in := range [][]byte{logLines(4096, 2), event(4096), append(noise(3000, 5), noise(3000, 5)...)} {
		out := f.appendFixed(CompressionDeflate, nil, in)
		if got := stdDecompress(t, CompressionDeflate, out); !bytes.Equal(got, in) {
			t.Fatalf("%d bytes: round trip differs", len(in))
		}
	}
}
