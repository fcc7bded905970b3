//go:build !amd64

package codec

// delimiterSIMD is false where there is no vector scan: delimiterWord
// runs the portable word-at-a-time scan only.
const delimiterSIMD = false

// delimiterVector is the amd64 scan's stand-in, never called.
func delimiterVector(p *[64]byte) uint64 { return delimiterWordWords(p[:], 0) }

// literalSIMD is false where there is no vector loop.
const literalSIMD = false

// codesVector is the amd64 loop's stand-in, never called.
func codesVector(codes, src []byte) (i int, wide uint32) { return 0, 0 }
