package codec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"
)

// base64Paths are the encoders appendBase64 can run on this machine: the
// portable word loop always, and the vector one where the CPU has it, so
// both are checked on an amd64 that would otherwise only ever take one.
func base64Paths() map[string]bool {
	paths := map[string]bool{"words": false}
	if base64SIMD {
		paths["simd"] = true
	}
	return paths
}

// TestAppendBase64 compares appendBase64 with encoding/base64 for every
// length around the vector loop's 16-byte loads, the word loop's 8-byte
// loads and the tail, at every offset of the source in a larger buffer,
// after existing bytes in dst, on each path.
func TestAppendBase64(t *testing.T) {
	buf := noise(300+64, 4)
	for name, simd := range base64Paths() {
		t.Run(name, func(t *testing.T) {
			for off := range 64 {
				for n := 0; n <= 300; n++ {
					src := buf[off : off+n]
					got := appendBase64Using([]byte("pre"), src, simd)
					want := "pre" + base64.StdEncoding.EncodeToString(src)
					if string(got) != want {
						t.Fatalf("offset %d, %d bytes: got %s, want %s", off, n, got, want)
					}
				}
			}
		})
	}
}

// TestAppendBase64Alphabet encodes every 6-bit value at every character
// position of every 3-byte group of a vector step: random input can miss
// the alphabet's edges (25/26, 51/52, 61, 62, 63) in a given lane.
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
	for name, simd := range base64Paths() {
		// A vector step takes four groups: starting one to three groups
		// later moves every group into each lane.
		for off := 0; off < 12; off += 3 {
			got := appendBase64Using(nil, src[off:], simd)
			if want := base64.StdEncoding.EncodeToString(src[off:]); string(got) != want {
				t.Fatalf("%s, offset %d: got %s, want %s", name, off, got, want)
			}
		}
	}
}

// TestAppendBase64Bounds checks that neither path writes past the output
// it is given: dst's capacity is exactly what the encoding needs, and the
// backing array goes on with sentinel bytes that must survive.
func TestAppendBase64Bounds(t *testing.T) {
	const sentinel = 0xa5
	src := noise(300, 9)
	for name, simd := range base64Paths() {
		for n := 0; n <= len(src); n++ {
			need := 3 + base64.StdEncoding.EncodedLen(n)
			backing := bytes.Repeat([]byte{sentinel}, need+64)
			copy(backing, "pre")
			got := appendBase64Using(backing[:3:need], src[:n], simd)
			if &got[0] != &backing[0] {
				t.Fatalf("%s, %d bytes: appendBase64 reallocated a dst that had room", name, n)
			}
			if want := "pre" + base64.StdEncoding.EncodeToString(src[:n]); string(got) != want {
				t.Fatalf("%s, %d bytes: got %s, want %s", name, n, got, want)
			}
			for k, b := range backing[need:] {
				if b != sentinel {
					t.Fatalf("%s, %d bytes: wrote %q %d bytes past the end of dst", name, n, b, k)
				}
			}
		}
	}
}

// TestBase64VectorBounds gives the vector loop outputs shorter than its
// input needs: it must stop where the output ends, report only what it
// wrote, and leave the bytes after the output alone.
func TestBase64VectorBounds(t *testing.T) {
	if !base64SIMD {
		t.Log("this CPU has no vector base64: only the word loop runs here")
		return
	}
	const sentinel = 0xa5
	src := noise(200, 11)
	want := base64.StdEncoding.EncodeToString(src)
	for m := 0; m <= len(want); m++ {
		backing := bytes.Repeat([]byte{sentinel}, m+64)
		i, o := base64Vector(backing[:m:m], src)
		if o > m || i > len(src) || i%12 != 0 || o != i/3*4 {
			t.Fatalf("output of %d: encoded %d bytes into %d characters", m, i, o)
		}
		if m-o >= 16 && len(src)-i >= 16 {
			t.Fatalf("output of %d: stopped at %d with room for another step", m, o)
		}
		if string(backing[:o]) != want[:o] {
			t.Fatalf("output of %d: got %s, want %s", m, backing[:o], want[:o])
		}
		for k, b := range backing[o:] {
			if b != sentinel {
				t.Fatalf("output of %d: wrote %q at %d, past the %d characters it reported", m, b, o+k, o)
			}
		}
	}
}

// FuzzAppendBase64 compares both paths with encoding/base64, appending
// onto whatever dst the fuzzer gives.
func FuzzAppendBase64(f *testing.F) {
	f.Add([]byte(""), []byte(""))
	f.Add([]byte("x"), []byte("hello, world"))
	f.Add([]byte(nil), bytes.Repeat([]byte{0xff, 0x00, 0xfb}, 40))
	f.Add([]byte("prefix"), noise(100, 3))
	f.Fuzz(func(t *testing.T, dst, src []byte) {
		want := string(dst) + base64.StdEncoding.EncodeToString(src)
		for name, simd := range base64Paths() {
			if got := appendBase64Using(bytes.Clone(dst), src, simd); string(got) != want {
				t.Fatalf("%s: got %q, want %q", name, got, want)
			}
		}
		if got := appendBase64(bytes.Clone(dst), src); string(got) != want {
			t.Fatalf("appendBase64: got %q, want %q", got, want)
		}
	})
}

// BenchmarkAppendBase64 reports MB/s of input encoded on each path: 342
// bytes is a sealed ~200-byte event's packet (about 456 characters), the
// size the PACKET path spends its base64 time on.
func BenchmarkAppendBase64(b *testing.B) {
	for name, simd := range base64Paths() {
		for _, n := range []int{48, 342, 4096} {
			src := noise(n, 7)
			b.Run(fmt.Sprintf("%s/%dB", name, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				var dst []byte
				for b.Loop() {
					dst = appendBase64Using(dst[:0], src, simd)
				}
			})
		}
	}
}
