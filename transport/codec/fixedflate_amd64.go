package codec

import "golang.org/x/sys/cpu"

// delimiterSIMD says whether delimiterWord takes the SSE2 scan, which
// every amd64 CPU has.
const delimiterSIMD = true

// delimiterVector returns a word with bit k set for each delimiter p[k]
// (see delimiters), 16 bytes per step with SSE2: a tenth of the
// instructions of the word-at-a-time scan.
//
//go:noescape
func delimiterVector(p *[64]byte) uint64

// literalSIMD says whether literalCodes takes codesVector, which needs
// SSSE3: chosen once, from what the CPU reports, and never changed.
var literalSIMD = cpu.X86.HasSSSE3

// codesVector is literalCodes' loop 16 bytes per step with SSSE3 (PSHUFB
// reverses the bits of every code at once): it writes the code of each
// byte of src into codes at the same offset while a 16-byte load from src
// and store into codes both fit, and returns how far it got and, nonzero
// if any of those bytes is ≥ 144, a mask of them. It reads and writes
// nothing outside the two slices. Callers check literalSIMD first.
//
//go:noescape
func codesVector(codes, src []byte) (i int, wide uint32)
