package codec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"
)

// TestAppendBase64 compares appendBase64 with encoding/base64 for every
// length around the word loop's 8-byte loads and the tail, at every offset
// of the source in a larger buffer, after existing bytes in dst.
func TestAppendBase64(t *testing.T) {
	buf := noise(300+64, 4)
	for off := range 64 {
		for n := 0; n <= 300; n++ {
			src := buf[off : off+n]
			got := appendBase64([]byte("pre"), src)
			want := "pre" + base64.StdEncoding.EncodeToString(src)
			if string(got) != want {
				t.Fatalf("offset %d, %d bytes: got %s, want %s", off, n, got, want)
			}
		}
	}
}

// TestAppendBase64Alphabet encodes every 6-bit value at every character
// position of a word step: random input can miss the alphabet's edges
// (25/26, 51/52, 61, 62, 63) at a given position.
func TestAppendBase64Alphabet(t *testing.T) {
	// Group g encodes the values g, g+13, g+26 and g+39 (mod 64), so
	// each of the four positions runs through all 64 values.
	src := make([]byte, 64*3)
	for g := range 64 {
		var x uint32
		for pos := range 4 {
			x = x<<6 | uint32(g+13*pos)%64
		}
		src[g*3], src[g*3+1], src[g*3+2] = byte(x>>16), byte(x>>8), byte(x)
	}
	// A word step takes two groups: starting one group later moves every
	// group into the other half.
	for off := 0; off < 6; off += 3 {
		got := appendBase64(nil, src[off:])
		if want := base64.StdEncoding.EncodeToString(src[off:]); string(got) != want {
			t.Fatalf("offset %d: got %s, want %s", off, got, want)
		}
	}
}

// TestAppendBase64Bounds checks that appendBase64 writes nothing past the
// output it is given: dst's capacity is exactly what the encoding needs,
// and the backing array goes on with sentinel bytes that must survive.
func TestAppendBase64Bounds(t *testing.T) {
	const sentinel = 0xa5
	src := noise(300, 9)
	for n := 0; n <= len(src); n++ {
		need := 3 + base64.StdEncoding.EncodedLen(n)
		backing := bytes.Repeat([]byte{sentinel}, need+64)
		copy(backing, "pre")
		got := appendBase64(backing[:3:need], src[:n])
		if &got[0] != &backing[0] {
			t.Fatalf("%d bytes: appendBase64 reallocated a dst that had room", n)
		}
		if want := "pre" + base64.StdEncoding.EncodeToString(src[:n]); string(got) != want {
			t.Fatalf("%d bytes: got %s, want %s", n, got, want)
		}
		for k, b := range backing[need:] {
			if b != sentinel {
				t.Fatalf("%d bytes: wrote %q %d bytes past the end of dst", n, b, k)
			}
		}
	}
}

// FuzzAppendBase64 compares appendBase64 with encoding/base64, appending
// onto whatever dst the fuzzer gives.
func FuzzAppendBase64(f *testing.F) {
	f.Add([]byte(""), []byte(""))
	f.Add([]byte("x"), []byte("hello, world"))
	f.Add([]byte(nil), bytes.Repeat([]byte{0xff, 0x00, 0xfb}, 40))
	f.Add([]byte("prefix"), noise(100, 3))
	f.Fuzz(func(t *testing.T, dst, src []byte) {
		want := string(dst) + base64.StdEncoding.EncodeToString(src)
		if got := appendBase64(bytes.Clone(dst), src); string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

// BenchmarkAppendBase64 reports MB/s of input encoded: 342 bytes is a
// sealed ~200-byte event's packet (about 456 characters), the size the
// PACKET path spends its base64 time on.
func BenchmarkAppendBase64(b *testing.B) {
	for _, n := range []int{48, 342, 4096} {
		src := noise(n, 7)
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			var dst []byte
			for b.Loop() {
				dst = appendBase64(dst[:0], src)
			}
		})
	}
}
