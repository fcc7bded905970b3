package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
)

// logArea returns the payload area of n log lines laid end to end.
func logArea(n int) []byte {
	return bytes.Join(logLines(n), nil)
}

// TestCompressHalves: compress gives an s2 block that decodes to the
// area, whole or cut in two; cut only when there are two goroutines to
// run at once and the area is big enough; nil when s2 does not make the
// area smaller.
func TestCompressHalves(t *testing.T) {
	noise := make([]byte, 3*splitCompressMin)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	big := logArea(2 * blockMaxRows)
	if len(big) < 2*splitCompressMin {
		t.Fatalf("test area of %d bytes is not a big block", len(big))
	}
	cases := []struct {
		name      string
		raw       []byte
		procs     int
		cut, none bool
	}{
		{"big, two procs", big, 2, true, false},
		{"big, one proc", big, 1, false, false},
		{"big, four procs", big, 4, true, false},
		{"just under the cut", big[:splitCompressMin-1], 2, false, false},
		{"at the cut", big[:splitCompressMin], 2, true, false},
		{"odd length", big[:2*splitCompressMin+1], 2, true, false},
		{"small", big[:300], 2, false, false},
		{"incompressible, two procs", noise, 2, false, true},
		{"incompressible, one proc", noise, 1, false, true},
	}
	var e blockEncoder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := e.compress(make([]byte, s2.MaxEncodedLen(len(c.raw))), c.raw, c.procs)
			if c.none {
				if got != nil {
					t.Fatalf("incompressible area stored compressed: %d of %d bytes", len(got), len(c.raw))
				}
				return
			}
			if got == nil {
				t.Fatal("compressible area not compressed")
			}
			dec, err := s2.Decode(nil, got)
			if err != nil || !bytes.Equal(dec, c.raw) {
				t.Fatalf("decoded %d bytes (%v), want the %d of the area", len(dec), err, len(c.raw))
			}
			whole := s2.Encode(nil, c.raw)
			if cut := !bytes.Equal(got, whole); cut != c.cut {
				t.Fatalf("cut in two: %v, want %v", cut, c.cut)
			}
			// Cutting loses the matches across the cut, no more.
			if len(got) > len(whole)+len(whole)/20 {
				t.Fatalf("%d bytes stored, %d compressed whole", len(got), len(whole))
			}
		})
	}
	e.release()
}

// FuzzCompressHalves: whatever the area, compress's block decodes to it.
// The fuzzer's bytes are tiled to an area big enough to be cut, each
// copy followed by its index so that it is not a pure repetition.
func FuzzCompressHalves(f *testing.F) {
	f.Add([]byte("2026-12-07T22:05:00Z INFO [http] served request user=42"), uint8(2))
	f.Add([]byte{0}, uint8(1))
	f.Add([]byte{}, uint8(2))
	var e blockEncoder
	f.Fuzz(func(t *testing.T, seed []byte, procs uint8) {
		raw := bytes.Clone(seed)
		for i := uint32(0); len(raw) < splitCompressMin+len(seed); i++ {
			raw = append(raw, seed...)
			raw = binary.LittleEndian.AppendUint32(raw, i)
		}
		got := e.compress(make([]byte, s2.MaxEncodedLen(len(raw))), raw, int(procs%4))
		if got == nil {
			return
		}
		if len(got) >= len(raw) {
			t.Fatalf("stored %d bytes for %d", len(got), len(raw))
		}
		dec, err := s2.Decode(nil, got)
		if err != nil || !bytes.Equal(dec, raw) {
			t.Fatalf("decoded %d bytes (%v), want %d", len(dec), err, len(raw))
		}
	})
}

// TestBigBlockRoundTrip: a block of the agent's size, whose area is
// compressed in two halves, decodes to its rows.
func TestBigBlockRoundTrip(t *testing.T) {
	lines := logLines(blockMaxRows)
	rows := make([]NewRow, len(lines))
	for i, l := range lines {
		rows[i] = NewRow{SourceID: "app", Payload: l}
	}
	b := decodeBlock(9, encodeBlock(9, 90, t0, rows), plainKeys)
	if b.err != nil {
		t.Fatal(b.err)
	}
	if b.comp != compS2 {
		t.Fatalf("compression %d, want s2", b.comp)
	}
	for i, l := range lines {
		if got := b.payload(uint64(9 + i)); !bytes.Equal(got, l) {
			t.Fatalf("row %d: %q, want %q", 9+i, got, l)
		}
	}
}

// BenchmarkCompressHalves compresses the payload area of a block of the
// agent's (512 file events of a 200-byte line each) whole (procs=1) and
// in two halves side by side (procs=2): time per row of the call, and
// stored bytes per payload byte.
func BenchmarkCompressHalves(b *testing.B) {
	var raw []byte
	for i, l := range logLines(blockMaxRows) {
		raw = fmt.Appendf(raw, `{"_index":0,"_file":"/var/log/bench/input.log","_line":%d,"_offset":%d,"_ts":%d,"payload":"%s"}`,
			i+1, (i+1)*len(l), 1_764_000_000_000+int64(i), l)
	}
	dst := make([]byte, s2.MaxEncodedLen(len(raw)))
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			var e blockEncoder
			var out []byte
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				out = e.compress(dst, raw, procs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*blockMaxRows), "ns/row")
			b.ReportMetric(float64(len(out))/float64(len(raw)), "stored-B/payload-B")
		})
	}
}
