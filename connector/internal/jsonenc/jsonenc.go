package jsonenc

import (
	"encoding/binary"
	"math/bits"
	"slices"
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
//
// Log text is mostly plain ASCII with, in JSON lines, a quote every few
// bytes. So it reads 8 bytes at a time and stores each word into dst
// before knowing how much of it is clean: the clean prefix is kept by
// advancing the write index, and the rest is overwritten. That needs a
// word of slack past the output, which the invariant below keeps, and
// spares an append (and its capacity check and copy call) per clean run.
func AppendStringContent(dst, s []byte) ([]byte, int) {
	n := len(dst)
	// Invariant at the top of the loop: len(buf)-n >= len(s)-i+8, so the
	// rest of s copied as it is plus one stored word always fits, and so
	// does one escape (at most 6 bytes, and len(s)-i >= 1 there).
	buf := slices.Grow(dst, len(s)+8)
	buf = buf[:cap(buf)]
	bad := 0
	clean := 3 // clean words in a row: blocks from 3 on
	for i := 0; i < len(s); {
		rest := len(s) - i
		if clean >= 3 && rest >= 16 {
			// Whole blocks, 16 bytes a step where the CPU can. Where
			// bytes to escape come close together (JSON keys, UTF-8
			// text), a call per run costs more than it saves: after a
			// special byte, words go on until three clean ones in a row.
			k := cleanCopy(buf[n:n+rest], s[i:])
			i += k
			n += k
			if rest -= k; rest == 0 {
				break
			}
		}
		var w uint64
		switch {
		case rest >= 8:
			w = binary.LittleEndian.Uint64(s[i:])
		case len(s) >= 8:
			// The last few bytes: load the word that ends with them and
			// shift them down. The zero bytes shifted in count as
			// control bytes, so a clean tail stops at its end.
			w = binary.LittleEndian.Uint64(s[len(s)-8:]) >> (8 * (8 - rest))
		default:
			for k := range rest {
				w |= uint64(s[i+k]) << (8 * k)
			}
		}
		binary.LittleEndian.PutUint64(buf[n:], w)
		m := special8(w)
		if m == 0 {
			i += 8
			n += 8
			clean++
			continue
		}
		clean = 0
		k := bits.TrailingZeros64(m) >> 3
		if i+k >= len(s) {
			n += len(s) - i // the flag is a zero shifted in past the end
			break
		}
		i += k
		n += k
		b := s[i]
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || size != 1 {
				for _, c := range s[i : i+size] { // at most 4: no copy call
					buf[n] = c
					n++
				}
				i += size
				continue
			}
			n += copy(buf[n:], `\ufffd`)
			bad++
		} else if e := shortEscape[b]; e != 0 {
			buf[n], buf[n+1] = '\\', e
			n += 2
		} else {
			n += copy(buf[n:], `\u00`)
			buf[n], buf[n+1] = hexDigits[b>>4], hexDigits[b&0xF]
			n += 2
		}
		i++
		if len(buf)-n < len(s)-i+8 {
			buf = slices.Grow(buf[:n], len(s)-i+8)
			buf = buf[:cap(buf)]
		}
	}
	return buf[:n], bad
}

// shortEscape maps the bytes JSON escapes with a backslash and one letter
// to that letter; the other bytes below 0x20 are written as \u00XX.
var shortEscape = [utf8.RuneSelf]byte{
	'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f',
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
// zero byte" bit trick: a byte below 0x20 borrows into its high bit when
// 0x20 is taken from it, and a byte equal to the quote (or backslash)
// does when 1 is taken from its xor with it. A borrow can flag a plain
// byte, but only above a flagged one, so the lowest flag is always exact,
// and that is the only one callers use.
func special8(w uint64) uint64 {
	x := w ^ quot
	y := w ^ bsl
	return ((w - sp) | w | ((x - lo7) &^ x) | ((y - lo7) &^ y)) & hi
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

// Decimal formats a sequence of non-negative integers that mostly grow by
// a little, such as a file's line numbers and offsets: it keeps the digits
// of the last value and adds the difference to them digit by digit, which
// for a step of 1 or of a line's length touches one to three digits where
// formatting afresh divides down all of them. The zero value is ready.
type Decimal struct {
	v      int64
	n      int // digits in use, from digits[0]; 0: none yet
	digits [20]byte
}

// maxDecimalStep bounds the difference added digit by digit; a bigger
// jump (or a smaller value) is formatted afresh.
const maxDecimalStep = 1 << 20

// Append appends the decimal form of v.
func (d *Decimal) Append(dst []byte, v int64) []byte {
	switch step := v - d.v; {
	case d.n == 0 || step < 0 || step > maxDecimalStep:
		if v < 0 {
			d.n = 0 // not cached: negative values are not a sequence here
			return strconv.AppendInt(dst, v, 10)
		}
		d.v = v
		d.n = len(strconv.AppendInt(d.digits[:0], v, 10))
	case step > 0 && step < 10 && d.digits[d.n-1]+byte(step) <= '9':
		d.v = v // the next line number, mostly: no carry
		d.digits[d.n-1] += byte(step)
	case step > 0:
		d.v = v
		for i, c := d.n-1, uint64(step); c != 0; i-- {
			if i < 0 {
				// A carry out of the top digit: one more digit.
				copy(d.digits[1:d.n+1], d.digits[:d.n])
				d.digits[0] = '0'
				d.n++
				i = 0
			}
			s := uint64(d.digits[i]-'0') + c%10
			c /= 10
			if s >= 10 {
				s -= 10
				c++
			}
			d.digits[i] = byte('0' + s)
		}
	}
	// Copy all 20 bytes (a few moves, no copy call) and keep n of them.
	l := len(dst)
	dst = slices.Grow(dst, len(d.digits))
	*(*[20]byte)(dst[l : l+20]) = d.digits
	return dst[:l+d.n]
}
