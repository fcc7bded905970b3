package codec

import "golang.org/x/sys/cpu"

// base64SIMD says whether appendBase64 takes the SSSE3 loop: chosen once,
// from what the CPU reports, and never changed.
var base64SIMD = cpu.X86.HasSSSE3

// base64Vector encodes src into out 12 bytes to 16 characters per step
// while a 16-byte load from src and a 16-byte store into out both fit, and
// returns how far it got in each (i a multiple of 12, o = i/3*4). It
// reads and writes nothing outside the two slices. Callers check
// base64SIMD first: it needs SSSE3.
//
//go:noescape
func base64Vector(out, src []byte) (i, o int)
