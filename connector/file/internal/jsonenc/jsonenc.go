package jsonenc

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// safe[b] is true for ASCII bytes that can be copied into a JSON string
// literal as they are. Bytes >= 0x80 are false so the slow path can check
// UTF-8 validity.
var safe = func() [256]bool {
	var t [256]bool
	for b := 0x20; b < 0x80; b++ {
		t[b] = true
	}
	t['"'] = false
	t['\\'] = false
	return t
}()

// AppendString appends s as a quoted JSON string and returns the extended
// buffer and the number of invalid UTF-8 sequences replaced by U+FFFD.
func AppendString(dst, s []byte) ([]byte, int) {
	dst = append(dst, '"')
	dst, bad := AppendStringContent(dst, s)
	return append(dst, '"'), bad
}

// AppendStringContent is AppendString without the surrounding quotes, so
// callers can build one literal from several pieces.
func AppendStringContent(dst, s []byte) ([]byte, int) {
	bad := 0
	start := 0
	for i := 0; i < len(s); {
		// Log text is mostly plain ASCII: look at 8 bytes at a time and,
		// in a word that holds a byte to look at, jump straight to the
		// first one (JSON lines have a quote every few bytes).
		if i+8 <= len(s) {
			m := special8(binary.LittleEndian.Uint64(s[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		} else if safe[s[i]] {
			i++
			continue
		}
		b := s[i]
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			bad++
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
		i++
		start = i
	}
	return append(dst, s[start:]...), bad
}

const (
	lo7  = 0x0101010101010101
	hi   = 0x8080808080808080
	quot = 0x2222222222222222
	bsl  = 0x5c5c5c5c5c5c5c5c
	sp   = 0x2020202020202020
)

// special8 returns a mask with the high bit set in the bytes of w (little
// endian: byte 0 is the lowest) that cannot be copied as they are: a
// control byte, quote, backslash or byte >= 0x80. It uses the classic "has
// zero byte" bit trick on each condition. A borrow can flag a plain byte,
// but only above a flagged one, so the lowest flag is always exact, and
// that is the only one callers use.
func special8(w uint64) uint64 {
	hasLess := (w - sp) & ^w & hi // some byte < 0x20 (bytes >= 0x80 come from w&hi)
	x := w ^ quot
	hasQuot := (x - lo7) & ^x & hi
	y := w ^ bsl
	hasBsl := (y - lo7) & ^y & hi
	return (w & hi) | hasLess | hasQuot | hasBsl
}

// AppendLatin1Content appends ISO-8859-1 bytes as JSON string content
// (without quotes). Every byte maps to the code point of the same value,
// so there are no invalid sequences; this saves a decode pass.
func AppendLatin1Content(dst, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if safe[b] {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		if b >= utf8.RuneSelf {
			dst = utf8.AppendRune(dst, rune(b))
			continue
		}
		dst, _ = AppendStringContent(dst, s[i:i+1])
	}
	return append(dst, s[start:]...)
}

// AppendInt appends the decimal form of v.
func AppendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// AppendUint appends the decimal form of v.
func AppendUint(dst []byte, v uint64) []byte { return strconv.AppendUint(dst, v, 10) }

// AppendHex64 appends v as 16 lower-case hex digits.
func AppendHex64(dst []byte, v uint64) []byte {
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(v>>uint(shift))&0xF])
	}
	return dst
}
