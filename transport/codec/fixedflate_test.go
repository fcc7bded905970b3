package codec

import (
	"bytes"
	stdflate "compress/flate"
	stdgzip "compress/gzip"
	stdzlib "compress/zlib"
	"encoding/json"
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
// byte-by-byte one for every input length up to
// fixedMaxInput and inputs dense and sparse in delimiters: a wrong mark
// would not corrupt the output, only lose matches, so round trips cannot
// catch it.
func TestDelimiterMarks(t *testing.T) {
	inputs := map[string][]byte{
		"log event":  event(fixedMaxInput),
		"all spaces": bytes.Repeat([]byte{' '}, fixedMaxInput),
		"quotes":     bytes.Repeat([]byte(`a"b c\"`), fixedMaxInput/7+1)[:fixedMaxInput],
		"log lines":  logLines(fixedMaxInput, 5),
		"every byte": bytes.Repeat(everyByte(), fixedMaxInput/256),
		"noise":      noise(fixedMaxInput, 3),
		// Each byte value next to each delimiter class's bounds.
		"bounds": bytes.Repeat([]byte{0x00, 0x2f, 0x30, 0x39, 0x3a, 0x40, 0x41, 0x7f, 0x80, 0xaf, 0xb0, 0xba, 0xc0, 0xff}, fixedMaxInput/14+1)[:fixedMaxInput],
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

// TestLiteralCodes checks literalCodes against fixedLiterals: each byte
// value next to the bounds of the 8-bit codes (0x8f/0x90) and of
// asciiCodes' lane arithmetic (0xcf/0xd0), at every position of inputs
// around the word loop's 8-byte steps. The codes are used only when
// every byte has an 8-bit one, so a byte wrongly called wide would only
// cost speed: this is the test that notices.
func TestLiteralCodes(t *testing.T) {
	values := []byte{0x00, 0x20, 0x7f, 0x80, 0x8f, 0x90, 0xcf, 0xd0, 0xff}
	var f fixedDeflater
	for n := 1; n <= 40; n++ {
		for pos := range n {
			for _, v := range values {
				src := bytes.Repeat([]byte{'a'}, n)
				src[pos] = v
				codes, ok := f.literalCodes(src)
				if want := v < 144; ok != want {
					t.Fatalf("byte %#x at %d of %d: all 8-bit codes %v, want %v", v, pos, n, ok, want)
				}
				if len(codes) != n+8 {
					t.Fatalf("%d codes for %d bytes, want %d", len(codes), n, n+8)
				}
				if !ok {
					continue
				}
				for i, b := range src {
					if want := byte(fixedLiterals[b].code); codes[i] != want {
						t.Fatalf("byte %#x at %d of %d: code %08b, want %08b", b, i, n, codes[i], want)
					}
				}
			}
		}
	}
	// Every byte with an 8-bit code in every lane.
	all := append(everyByte()[:144], everyByte()[:144]...)
	for off := range 8 {
		codes, ok := f.literalCodes(all[off:])
		if !ok {
			t.Fatalf("bytes below 144 from %d: called wide", off)
		}
		for i, b := range all[off:] {
			if want := byte(fixedLiterals[b].code); codes[i] != want {
				t.Fatalf("byte %#x at %d from %d: code %08b, want %08b", b, i, off, codes[i], want)
			}
		}
	}
}

// TestFixedDeflateRoundTrips runs the fixed-Huffman encoder for every
// input length up to fixedMaxInput, at several offsets into shapes of
// input that take every branch (log text, escaped JSON, bytes coded in 9
// bits, runs, noise): each block must inflate to its input.
func TestFixedDeflateRoundTrips(t *testing.T) {
	escaped, err := json.Marshal(string(logLines(2*fixedMaxInput, 4)))
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]byte{
		"log lines":    logLines(fixedMaxInput+8, 3),
		"escaped json": escaped[:fixedMaxInput+8],
		"high bytes":   bytes.Repeat([]byte("caf\xc3\xa9 \xe2\x82\xac=\x90\x8f;"), fixedMaxInput/10),
		"run":          bytes.Repeat([]byte{'a'}, fixedMaxInput+8),
		"noise":        noise(fixedMaxInput+8, 6),
		"every byte":   bytes.Repeat(everyByte(), fixedMaxInput/256+1),
	}
	var f fixedDeflater
	for name, shape := range shapes {
		for _, off := range []int{0, 1, 5} {
			for n := 0; n <= fixedMaxInput; n++ {
				src := shape[off : off+n]
				f.storeLeft = 0 // search every input, not only every 16th
				out := f.appendDeflate(nil, src)
				if got := stdDecompress(t, CompressionDeflate, out); !bytes.Equal(got, src) {
					t.Fatalf("%s at %d, %d bytes: round trip differs", name, off, n)
				}
			}
		}
	}
}

// TestFixedDeflateCompresses pins that level 1's search still
// compresses, on both of its paths: log events (searched at delimiters)
// come out smaller than their literals alone would, and input without
// delimiters (searched densely) still shrinks when it repeats. Every
// input is searched here (storeLeft cleared): storing the inputs after
// one not worth it is TestFixedDeflateStoresWhatDoesNotShrink's.
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
				f.storeLeft = 0
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

// TestFixedDeflateStoresWhatDoesNotShrink: after an input whose fixed
// block is less than an eighth smaller than storing it, level 1 stores
// the next storeSkip inputs without searching them, then searches one
// again; input that shrinks (multi-line text) is searched every time,
// and compressed again from the input after a search finds it shrinks.
// Every block inflates to its input.
func TestFixedDeflateStoresWhatDoesNotShrink(t *testing.T) {
	events := agentEvents(3*(storeSkip+1), 11)
	text := logLines(fixedMaxInput, 3)
	var f fixedDeflater
	var kinds []byte // 's' stored, 'f' fixed Huffman, per input
	deflate := func(src []byte) {
		t.Helper()
		b := f.appendDeflate(nil, src)
		if got := stdDecompress(t, CompressionDeflate, b); !bytes.Equal(got, src) {
			t.Fatalf("input %d: round trip differs", len(kinds))
		}
		kind := byte('f')
		if b[0]&0b110 == 0 { // BTYPE 00
			kind = 's'
		}
		kinds = append(kinds, kind)
	}
	for _, ev := range events[:2*(storeSkip+1)] {
		deflate(ev)
	}
	// Text arriving while events are being stored waits for the next
	// search: storeSkip-5 more stored blocks, then it is compressed.
	for _, ev := range events[2*(storeSkip+1):][:6] {
		deflate(ev)
	}
	for range storeSkip - 5 + 2 {
		deflate(text)
	}
	for _, ev := range events[2*(storeSkip+1):][6:8] {
		deflate(ev)
	}
	skip := strings.Repeat("s", storeSkip)
	want := "f" + skip + "f" + skip + // events: searched, then stored storeSkip times, twice
		"f" + "sssss" + // one more searched, five stored
		strings.Repeat("s", storeSkip-5) + "ff" + // text: stored until the next search, then compressed
		"fs" // events again: searched, then stored
	if got := string(kinds); got != want {
		t.Fatalf("blocks %s, want %s (f: fixed Huffman, s: stored)", got, want)
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
