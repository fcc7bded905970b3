package codec

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// stdAlphabet is the standard base64 alphabet (RFC 4648 §4), the one the
// envelope's payload and iv use.
const stdAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// base64Pairs maps 12 bits to the two characters that encode them, the
// first in the low byte. At 8 KiB it stays in the L1 cache next to the
// rest of an Encode's data, and halves the lookups per character.
var base64Pairs = func() (t [1 << 12]uint16) {
	for i := range t {
		t[i] = uint16(stdAlphabet[i>>6]) | uint16(stdAlphabet[i&63])<<8
	}
	return t
}()

// appendBase64 appends src in standard, padded base64, as
// base64.StdEncoding.AppendEncode does: the word loop takes six bytes at
// a time (half the table lookups of encoding/base64), and encoding/base64
// the last few, with the padding.
func appendBase64(dst, src []byte) []byte {
	n := base64.StdEncoding.EncodedLen(len(src))
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	i, o := base64Words(out, src)
	// i is a multiple of 3, so the rest encodes on its own.
	base64.StdEncoding.Encode(out[o:], src[i:])
	return dst
}

// base64Words is appendBase64's loop, apart so that its few live values
// stay in registers: it encodes src six bytes at a time into out while an
// 8-byte load and store fit, and returns how far it got in each.
func base64Words(out, src []byte) (i, o int) {
	// Loads read 8 bytes and use 6, so the loop stops 2 short of the
	// end; stores write exactly the 8 characters of those 6 bytes.
	for ; i+8 <= len(src) && o+8 <= len(out); i, o = i+6, o+8 {
		x := binary.BigEndian.Uint64(src[i : i+8])
		binary.LittleEndian.PutUint64(out[o:o+8],
			uint64(base64Pairs[x>>52])|
				uint64(base64Pairs[x>>40&0xfff])<<16|
				uint64(base64Pairs[x>>28&0xfff])<<32|
				uint64(base64Pairs[x>>16&0xfff])<<48)
	}
	return i, o
}
