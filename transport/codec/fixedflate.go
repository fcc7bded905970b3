package codec

import (
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"math/bits"
)

// Level 1 writes an event of up to fixedMaxInput bytes as one deflate block
// coded with the fixed Huffman code of RFC 1951 §3.2.6, after a greedy
// LZ77 pass. A dynamic block, which every klauspost level writes, spends
// most of its time building and describing Huffman tables: for an event of
// a few hundred bytes that is ~90 % of the cost, and the table it sends
// takes back most of what its shorter codes save (BenchmarkGzipBare,
// BenchmarkLevel1BySize). Any inflater reads a fixed block: zlib itself
// writes one when it comes out smaller.
//
// From 1 KiB up the table's cost is a small part of the work and a dynamic
// block is about a fifth smaller, so klauspost's level 1 takes over.
const fixedMaxInput = 1024

// Window and match limits of deflate (RFC 1951 §3.2.5).
const (
	fixedMinMatch = 4 // shorter matches cost as much as their literals
	fixedMaxMatch = 258
	// fixedTableBits sizes the match finder's hash table for the largest
	// input; smaller inputs use (and clear) a smaller prefix of it.
	fixedTableBits = 10
)

// An input of fixedMaxInput never reaches back past deflate's 32 KiB
// window, and its positions fit the table's uint16 entries.
var _ = [1]struct{}{}[fixedMaxInput>>15]

// fixedDeflater holds the match finder's table; it lives in a pooled
// compressor so no call allocates or zeroes more than it uses.
type fixedDeflater struct {
	// table maps a hash of 4 bytes to 1 + the last position they were
	// seen at; 0 is empty.
	table [1 << fixedTableBits]uint16
	bw    bitWriter
}

// fixedCode is a fixed Huffman code, bit-reversed for LSB-first output,
// with its length in bits.
type fixedCode struct {
	code uint16
	len  uint8
}

// fixedLiterals is the fixed literal/length code, symbols 0..287. It is
// computed once and only read.
var fixedLiterals = func() (t [288]fixedCode) {
	for s := range t {
		var code, n int
		switch {
		case s < 144:
			code, n = 0x30+s, 8
		case s < 256:
			code, n = 0x190+s-144, 9
		case s < 280:
			code, n = s-256, 7
		default:
			code, n = 0xc0+s-280, 8
		}
		t[s] = fixedCode{code: bits.Reverse16(uint16(code)) >> (16 - n), len: uint8(n)}
	}
	return t
}()

// bitWriter packs codes LSB first, as deflate does.
type bitWriter struct {
	out []byte
	acc uint64
	n   uint
}

// write appends the low nb bits of v, nb at most 31. Between calls fewer
// than 48 bits are pending, so making room first keeps everything within
// the 64-bit accumulator.
func (w *bitWriter) write(v uint64, nb uint) {
	if w.n >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.acc))
		w.acc >>= 32
		w.n -= 32
	}
	w.acc |= v << w.n
	w.n += nb
	if w.n >= 48 {
		w.out = binary.LittleEndian.AppendUint64(w.out, w.acc)
		w.out = w.out[:len(w.out)-2]
		w.acc >>= 48
		w.n -= 48
	}
}

// flush writes the pending bits, padding the last byte with zeros.
func (w *bitWriter) flush() []byte {
	for w.n > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.n -= min(w.n, 8)
	}
	w.acc = 0
	return w.out
}

// literals writes each byte of p as a literal. It keeps the bit state in
// locals and writes seven ASCII bytes (8-bit codes) in one step: literals
// are most of what a log line becomes, and this loop the encoder's hot spot.
func (w *bitWriter) literals(p []byte) {
	acc, n, out := w.acc, w.n, w.out
	for len(p) > 0 {
		if len(p) >= 8 && binary.LittleEndian.Uint64(p)&0x8080808080808080 == 0 {
			// Out with the whole bytes pending (fewer than 8 bits stay),
			// then 56 bits of codes; the 8-byte load only checks p[7].
			out = binary.LittleEndian.AppendUint64(out, acc)
			out = out[:len(out)-8+int(n>>3)]
			acc >>= n &^ 7
			n &= 7
			acc |= (uint64(fixedLiterals[p[0]].code) |
				uint64(fixedLiterals[p[1]].code)<<8 |
				uint64(fixedLiterals[p[2]].code)<<16 |
				uint64(fixedLiterals[p[3]].code)<<24 |
				uint64(fixedLiterals[p[4]].code)<<32 |
				uint64(fixedLiterals[p[5]].code)<<40 |
				uint64(fixedLiterals[p[6]].code)<<48) << n
			n += 56
			p = p[7:]
		} else {
			c := fixedLiterals[p[0]]
			acc |= uint64(c.code) << n
			n += uint(c.len)
			p = p[1:]
		}
		if n >= 48 {
			out = binary.LittleEndian.AppendUint64(out, acc)
			out = out[:len(out)-2]
			acc >>= 48
			n -= 48
		}
	}
	w.acc, w.n, w.out = acc, n, out
}

// match writes a length (fixedMinMatch..fixedMaxMatch) and a distance
// (1..32768) as one code of at most 8+5+5+13 = 31 bits.
func (w *bitWriter) match(length, dist int) {
	var sym, extra, nExtra int
	if y := length - 3; y < 8 {
		sym = y
	} else if length == fixedMaxMatch {
		sym = 28
	} else {
		// Lengths 11..257 come in groups of 4 codes per extra bit.
		nExtra = bits.Len(uint(y)) - 3
		sym = 4*nExtra + (y>>nExtra)&3 + 4
		extra = y & (1<<nExtra - 1)
	}
	c := fixedLiterals[257+sym]
	v, n := uint64(c.code), uint(c.len)
	v |= uint64(extra) << n
	n += uint(nExtra)

	var dsym, dExtra, dnExtra int
	if x := dist - 1; x < 4 {
		dsym = x
	} else {
		// Distances 5..32768 come in groups of 2 codes per extra bit.
		dnExtra = bits.Len(uint(x)) - 2
		dsym = 2*dnExtra + (x>>dnExtra)&1 + 2
		dExtra = x & (1<<dnExtra - 1)
	}
	// Distance codes are 5 bits, bit-reversed like every Huffman code.
	v |= uint64(bits.Reverse8(uint8(dsym))>>3) << n
	n += 5
	v |= uint64(dExtra) << n
	n += uint(dnExtra)
	w.write(v, n)
}

// appendDeflate appends src, at most fixedMaxInput bytes, as one final
// deflate block: fixed Huffman, or stored when that is smaller (input
// with few repeats and many bytes ≥ 144, which fixed codes in 9 bits).
func (f *fixedDeflater) appendDeflate(dst, src []byte) []byte {
	start := len(dst)
	w := &f.bw
	w.out, w.acc, w.n = dst, 0, 0
	w.write(1|1<<1, 3) // BFINAL, BTYPE 01: fixed Huffman
	f.tokens(src)
	w.write(uint64(fixedLiterals[256].code), uint(fixedLiterals[256].len)) // end of block
	dst = w.flush()
	w.out = nil
	if len(dst)-start > len(src)+5 {
		dst = append(dst[:start], 1) // BFINAL, BTYPE 00: stored
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(src)))
		dst = binary.LittleEndian.AppendUint16(dst, ^uint16(len(src)))
		dst = append(dst, src...)
	}
	return dst
}

// tokens writes src as literals and greedy matches found through a hash
// of the next 4 bytes, the way klauspost's level 1 searches.
func (f *fixedDeflater) tokens(src []byte) {
	w := &f.bw
	tableBits := min(max(bits.Len(uint(len(src))), 6), fixedTableBits)
	table := f.table[:1<<tableBits]
	clear(table)
	shift := 32 - tableBits
	hash := func(u uint32) uint32 { return (u * 0x1e35a7bd) >> shift }

	lit := 0 // first byte not yet written
	last := len(src) - fixedMinMatch
	// Two positions per turn: their lookups do not depend on each other,
	// so the CPU overlaps them. The last position is searched only as the
	// second of a pair; a turn that would start there is left to literals,
	// which loses at most one 4-byte match.
	for s := 0; s < last; {
		cv0 := binary.LittleEndian.Uint32(src[s:])
		cv1 := binary.LittleEndian.Uint32(src[s+1:])
		h0, h1 := hash(cv0), hash(cv1)
		c0 := int(table[h0]) - 1
		table[h0] = uint16(s + 1)
		c1 := int(table[h1]) - 1
		table[h1] = uint16(s + 2)
		cand := c0
		switch {
		case c0 >= 0 && binary.LittleEndian.Uint32(src[c0:]) == cv0:
		case c1 >= 0 && binary.LittleEndian.Uint32(src[c1:]) == cv1:
			s, cand = s+1, c1
		default:
			// Step faster through input that does not repeat, as snappy
			// does: every 32 bytes without a match add one to the step.
			s += 2 + (s-lit)>>5
			continue
		}
		n := fixedMinMatch + matchLen(src[cand+fixedMinMatch:], src[s+fixedMinMatch:min(len(src), s+fixedMaxMatch)])
		w.literals(src[lit:s])
		w.match(n, s-cand)
		s += n
		lit = s
		// Index the end of the match so the next one can start there.
		if p := s - 1; p <= last {
			table[hash(binary.LittleEndian.Uint32(src[p:]))] = uint16(p + 1)
		}
	}
	w.literals(src[lit:])
}

// matchLen returns how many leading bytes a and b share, b being the
// shorter or equal.
func matchLen(a, b []byte) int {
	n := 0
	for len(b)-n >= 8 {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// gzipFastHeader is RFC 1952's header: deflate, no name or time, XFL 4
// (fastest), OS unknown.
const gzipFastHeader = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff"

// appendFixed appends src compressed at level 1 in c's framing; src is at
// most fixedMaxInput bytes and c one of the deflate family.
func (f *fixedDeflater) appendFixed(c Compression, dst, src []byte) []byte {
	switch c {
	case CompressionGzip:
		dst = append(dst, gzipFastHeader...)
		dst = f.appendDeflate(dst, src)
		dst = binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(src))
		return binary.LittleEndian.AppendUint32(dst, uint32(len(src)))
	case CompressionZlib:
		// CMF 0x78: deflate, 32 KiB window; FLG 0x01: fastest, and the
		// check bits making 0x7801 a multiple of 31 (RFC 1950).
		dst = append(dst, 0x78, 0x01)
		dst = f.appendDeflate(dst, src)
		return binary.BigEndian.AppendUint32(dst, adler32.Checksum(src))
	default:
		return f.appendDeflate(dst, src)
	}
}
