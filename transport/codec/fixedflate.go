package codec

import (
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"math/bits"
	"slices"
)

// Level 1 writes an event of up to fixedMaxInput bytes as one deflate block
// coded with the fixed Huffman code of RFC 1951 §3.2.6, after a greedy
// LZ77 pass that, on text, searches only where words start (tokens). A dynamic block, which every klauspost level writes, spends
// most of its time building and describing Huffman tables: for an event of
// a few hundred bytes that is most of the cost, and the table it sends
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
	// fixedTableBits sizes the match finder's hash table.
	fixedTableBits = 10
)

// An input of fixedMaxInput never reaches back past deflate's 32 KiB
// window, and its positions fit the table's uint16 entries.
var _ = [1]struct{}{}[fixedMaxInput>>15]

// fixedDeflater holds the match finder's table; it lives in a pooled
// compressor so no call allocates.
type fixedDeflater struct {
	// table maps a hash of 4 bytes to the last position they were seen
	// at. It is not cleared between inputs: every candidate is checked
	// against the bytes it claims to repeat and must lie before the
	// current position, so an entry left by an earlier input is only a
	// candidate that fails (or, harmlessly, one that holds).
	table [1 << fixedTableBits]uint16
	// storeLeft is how many more inputs to store without searching
	// them (storeSkip).
	storeLeft int
	// codes holds the literal code of each byte of the input, one byte
	// each (literalCodes), and 8 more bytes to read past its end.
	codes []byte
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

// asciiCodes returns the fixed codes of the eight bytes of x, each below
// 0x80, in the same byte lanes. Such a byte b has the 8-bit code 0x30+b
// (which cannot carry into the next lane), sent bit-reversed: three
// swaps (nibbles, pairs, bits) reverse every lane at once.
func asciiCodes(x uint64) uint64 {
	x += 0x3030303030303030
	x = x>>4&0x0f0f0f0f0f0f0f0f | x&0x0f0f0f0f0f0f0f0f<<4
	x = x>>2&0x3333333333333333 | x&0x3333333333333333<<2
	return x>>1&0x5555555555555555 | x&0x5555555555555555<<1
}

// bitWriter packs codes LSB first, as deflate does, into buf, which the
// caller sized for the worst case plus 8 bytes, so every store is a whole
// 64-bit word with no length check. Between calls fewer than 8 bits are
// pending: they sit in acc and, already stored, at buf[o].
type bitWriter struct {
	buf []byte
	o   int
	acc uint64
	n   uint
}

// write appends the low nb bits of v, nb at most 56.
func (w *bitWriter) write(v uint64, nb uint) {
	w.acc |= v << w.n
	w.n += nb
	binary.LittleEndian.PutUint64(w.buf[w.o:], w.acc)
	w.o += int(w.n >> 3)
	w.acc >>= w.n &^ 7
	w.n &= 7
}

// end returns buf up to the last byte holding bits, padded with zeros.
func (w *bitWriter) end() []byte {
	return w.buf[:w.o+int(w.n+7)>>3]
}

// literals writes each byte of p as a literal. Literals are most of what
// a log line becomes, so ASCII goes eight bytes at a time (asciiLiterals).
// Text searched at delimiters takes codedRun instead, unless it holds
// bytes coded in 9 bits.
func (w *bitWriter) literals(p []byte) {
	for len(p) > 0 {
		i := w.asciiLiterals(p)
		if i == len(p) {
			return
		}
		// A byte ≥ 0x80 (coded in 8 or 9 bits), or one of the input's
		// last few bytes.
		c := fixedLiterals[p[i]]
		w.acc |= uint64(c.code) << (w.n & 63)
		w.n += uint(c.len)
		binary.LittleEndian.PutUint64(w.buf[w.o:], w.acc)
		w.o += int(w.n >> 3)
		w.acc >>= w.n &^ 7
		w.n &= 7
		p = p[i+1:]
	}
}

// asciiLiterals writes the leading ASCII bytes of p and returns how many
// it wrote: all of p, or up to a byte ≥ 0x80, or up to the last few bytes
// of the input. Eight bytes take one load, the lane-wise code computation
// of asciiCodes and one store; their codes are all 8 bits long, so the
// pending bit count stays as it is and the bits that do not fit carry
// over to the next word.
func (w *bitWriter) asciiLiterals(p []byte) int {
	const hi = 0x8080808080808080
	// Each byte takes 8 bits, so the word for p[i:i+8] goes to dst[i:].
	dst := w.buf[w.o:]
	i, acc := asciiWords(dst, p, w.acc, w.n)
	if k := len(p) - i; k > 0 && k < 8 && cap(p)-i >= 8 {
		// A short tail followed by more input: read eight bytes, keep
		// the lanes of p.
		keep := uint64(1)<<(8*k) - 1
		if x := binary.LittleEndian.Uint64(p[i:i+8]) & keep; x&hi == 0 {
			acc |= asciiCodes(x) & keep << (w.n & 63)
			binary.LittleEndian.PutUint64(dst[i:], acc)
			acc >>= 8 * uint(k) & 63
			i += k
		}
	}
	w.o += i
	w.acc = acc
	return i
}

// asciiWords is asciiLiterals' loop over whole words, apart so that its
// few live values stay in registers: it codes p eight bytes at a time up
// to the first word holding a byte ≥ 0x80, into dst at the same offsets,
// after the n bits pending in acc. It returns the bytes coded and the
// bits pending after them (n still).
func asciiWords(dst, p []byte, acc uint64, n uint) (int, uint64) {
	const hi = 0x8080808080808080
	// c<<n and c>>(64-n) of a code word c in one multiplication: the low
	// and high halves of c·2ⁿ.
	m := uint64(1) << (n & 63)
	i := 0
	for ; i+8 <= len(p) && i+8 <= len(dst); i += 8 {
		x := binary.LittleEndian.Uint64(p[i : i+8])
		if x&hi != 0 {
			break
		}
		carry, c := bits.Mul64(asciiCodes(x), m)
		binary.LittleEndian.PutUint64(dst[i:i+8], acc|c)
		acc = carry
	}
	return i, acc
}

// literalCodes returns the literal code of each byte of src, bit-reversed
// for LSB-first output, in one byte each, followed by 8 bytes to read
// past the end, and whether every byte has such an 8-bit code (is below
// 144; 9-bit codes do not fit). Coding all of an input's bytes in one
// pass, eight per step, leaves each run of
// literals between matches a shifted copy (codedRun): runs are short
// (~55 bytes in agent events), and coding each apart cost more in its
// setup and its last, partial word than in its whole ones.
func (f *fixedDeflater) literalCodes(src []byte) ([]byte, bool) {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	n := len(src)
	if cap(f.codes) < n+8 {
		f.codes = make([]byte, max(n, fixedMaxInput)+8)
	}
	codes := f.codes[:n+8]
	i := 0
	var wide uint64 // a lane is ≥ 0x90 where its high bit is set
	for ; i+8 <= n; i += 8 {
		x := binary.LittleEndian.Uint64(src[i : i+8])
		// A lane from 0xd0 up carries into the next one in asciiCodes;
		// it is also ≥ 0x90, so the codes are not used.
		wide |= x & (x&lo7 + 0x7070707070707070) & hi
		binary.LittleEndian.PutUint64(codes[i:i+8], asciiCodes(x))
	}
	for ; i < n; i++ {
		if src[i] >= 144 {
			wide = 1
		}
		codes[i] = byte(fixedLiterals[src[i]].code)
	}
	return codes, wide == 0
}

// codedRun writes the literals whose codes are codes[lit:s] (see
// literalCodes), eight per step: each word of codes is shifted up by the
// pending bits, the bits it pushes out carried to the next. Its last word
// may hold codes from past s; they land past the run's end, where the
// next write stores over them, and the bits pending after the run are
// read back from the byte the run ends in.
func (w *bitWriter) codedRun(codes []byte, lit, s int) {
	n := s - lit
	dst := w.buf[w.o:]
	// c<<n and c>>(64-n) of a word c in one multiplication, as in
	// asciiWords.
	m := uint64(1) << (w.n & 63)
	runWords(dst, codes[lit:], n, w.acc, m)
	w.acc = uint64(dst[n]) & (m - 1)
	w.o += n
}

// runWords is codedRun's loop, apart so that its few live values stay in
// registers: the words of codes covering its first n bytes go to dst at
// the same offsets, times m, after acc, and then the last carry, so that
// a run of whole words also leaves its pending bits at dst[n].
func runWords(dst, codes []byte, n int, acc, m uint64) {
	i := 0
	for ; i < n; i += 8 {
		carry, c := bits.Mul64(binary.LittleEndian.Uint64(codes[i:i+8]), m)
		binary.LittleEndian.PutUint64(dst[i:i+8], acc|c)
		acc = carry
	}
	binary.LittleEndian.PutUint64(dst[i:i+8], acc)
}

// match writes a length (fixedMinMatch..fixedMaxMatch) and a distance
// (1..32768) as one code of at most 8+5+5+13 = 31 bits, from tables for
// every length and for the distances an input of fixedMaxInput has.
func (w *bitWriter) match(length, dist int) {
	l := fixedLengthCodes[length]
	var d fixedBits
	if dist <= len(fixedDistCodes) {
		d = fixedDistCodes[dist-1]
	} else {
		d = distCode(dist)
	}
	w.write(uint64(l.bits)|uint64(d.bits)<<l.n, uint(l.n)+uint(d.n))
}

// fixedBits is a code and its extra bits, ready to write: n bits of bits.
type fixedBits struct {
	bits uint32
	n    uint8
}

// fixedLengthCodes holds the length code of every match length, 3..258,
// with its extra bits (RFC 1951 §3.2.5), computed once and only read.
var fixedLengthCodes = func() (t [fixedMaxMatch + 1]fixedBits) {
	for length := 3; length <= fixedMaxMatch; length++ {
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
		t[length] = fixedBits{bits: uint32(c.code) | uint32(extra)<<c.len, n: c.len + uint8(nExtra)}
	}
	return t
}()

// fixedDistCodes holds distCode(d) for d in 1..fixedMaxInput.
var fixedDistCodes = func() (t [fixedMaxInput]fixedBits) {
	for i := range t {
		t[i] = distCode(i + 1)
	}
	return t
}()

// distCode returns the distance code of dist (1..32768) with its extra
// bits.
func distCode(dist int) fixedBits {
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
	return fixedBits{bits: uint32(bits.Reverse8(uint8(dsym))>>3) | uint32(dExtra)<<5, n: 5 + uint8(dnExtra)}
}

// fixedWorstCase bounds the deflate body of n input bytes: a literal
// takes at most 9 bits and a match of at least 4 bytes at most 31, plus
// the 3-bit block header, the 7-bit end of block and the last byte's
// padding, plus 16 bytes for bitWriter's whole-word stores (codedRun's
// run past its end by up to 15).
func fixedWorstCase(n int) int { return (3+9*n+7+7)/8 + 16 }

// appendDeflate appends src, at most fixedMaxInput bytes, as one final
// deflate block: fixed Huffman, or stored when that is smaller (input
// with few repeats and many bytes ≥ 144, which fixed codes in 9 bits).
//
// It also stores, without searching, the storeSkip inputs that follow
// one whose fixed block came out less than an eighth smaller than
// storing it: searching and coding is most of level 1's cost, and single
// log lines of a few hundred bytes barely shrink. Every storeSkip+1-th
// input is searched again, so input that starts to compress (longer
// events, multi-line text) is compressed again from the next one on.
func (f *fixedDeflater) appendDeflate(dst, src []byte) []byte {
	if f.storeLeft > 0 {
		f.storeLeft--
		return appendStored(dst, src)
	}
	start := len(dst)
	dst = slices.Grow(dst, fixedWorstCase(len(src)))
	w := bitWriter{buf: dst[:start+fixedWorstCase(len(src))], o: start}
	w.write(1|1<<1, 3) // BFINAL, BTYPE 01: fixed Huffman
	f.tokens(&w, src)
	w.write(uint64(fixedLiterals[256].code), uint(fixedLiterals[256].len)) // end of block
	dst = w.end()
	stored := len(src) + storedOverhead
	if 8*(stored-(len(dst)-start)) < stored {
		f.storeLeft = storeSkip
	}
	if len(dst)-start > stored {
		return appendStored(dst[:start], src)
	}
	return dst
}

// storedOverhead is what a stored block adds to its bytes: the block
// header byte and LEN, NLEN.
const storedOverhead = 5

// storeSkip is how many inputs level 1 stores, unsearched, after one it
// found not worth compressing (appendDeflate).
const storeSkip = 15

// appendStored appends src, at most 65,535 bytes, as one final stored
// block.
func appendStored(dst, src []byte) []byte {
	dst = append(dst, 1) // BFINAL, BTYPE 00: stored
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(src)))
	dst = binary.LittleEndian.AppendUint16(dst, ^uint16(len(src)))
	return append(dst, src...)
}

// fixedHash hashes 4 bytes to an index of the match finder's table.
func fixedHash(u uint32) uint32 { return (u * 0x1e35a7bd) >> (32 - fixedTableBits) }

// tokens writes src as literals and greedy matches. Text is searched only
// where punctuation or spaces start (anchorTokens): a quarter of the
// probes of searching every position, for about the same matches in log
// lines. Input with too few delimiters to search that way (binary data,
// long runs) gets the dense search of denseTokens instead.
func (f *fixedDeflater) tokens(w *bitWriter, src []byte) {
	if len(src) < 2*8 {
		f.denseTokens(w, src)
		return
	}
	mark := *w
	if f.anchorTokens(w, src) >= len(src)/fixedMinAnchorGap {
		return
	}
	// Too few places searched for this to be text: write the block again
	// from where it started. The table keeps what the first pass stored,
	// which is harmless (candidates are verified).
	*w = mark
	f.denseTokens(w, src)
}

// fixedMinAnchorGap is the mean distance between searched delimiters past
// which anchorTokens would search too few places: log text has one every
// 6 to 8 bytes, so this falls back only on input that is not text.
const fixedMinAnchorGap = 32

// delimiters returns, in the high bit of each byte lane of x, whether the
// byte is an ASCII control character, space or punctuation below '0', or
// one of ":;<=>?@": where a repeated word, key, value or quoted string of
// a log line starts.
func delimiters(x uint64) uint64 {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	// Adding to the low 7 bits of each lane sets its high bit when the
	// lane is at least 0x80 minus the addend, and cannot carry into the
	// next lane; lanes of x ≥ 0x80 are no delimiters.
	t := x & lo7
	below30 := ^(t + 0x5050505050505050)
	from3a := t + 0x4646464646464646
	below41 := ^(t + 0x3f3f3f3f3f3f3f3f)
	return (below30 | from3a&below41) &^ x & hi
}

// anchorTokens searches for a match only at the first delimiter of each
// run of them (see delimiters). A word, key, value or quoted string that
// repeats comes after a delimiter both times, so searching from there
// finds about what a search of every position finds in log text, with a
// fraction of the probes (BenchmarkLevel1BySize compares). Each match is
// also extended backwards, over a delimiter run's earlier bytes for one.
// The delimiters are found 64 bytes at a time as one bit per byte, eight
// bytes per step, so the search loop branches once per anchor rather than
// once per byte. It returns how many positions it
// searched, so tokens can tell text from input it should search densely.
func (f *fixedDeflater) anchorTokens(w *bitWriter, src []byte) (anchors int) {
	table := &f.table
	lit := 0                         // first byte not yet written
	last := len(src) - fixedMinMatch // last position a match can start at
	var prev uint64                  // the last word's top bit
	codes, coded := f.literalCodes(src)
	for j := 0; j < len(src); j += 64 {
		bm := delimiterWord(src, j)
		// Only where a run starts: "\",\"" is one place to search, not four.
		bm, prev = bm&^(bm<<1|prev), bm>>63
		for bm != 0 {
			s := j + bits.TrailingZeros64(bm)
			bm &= bm - 1
			if s < lit {
				continue // inside the last match
			}
			if s > last {
				break
			}
			anchors++
			cv := binary.LittleEndian.Uint32(src[s:])
			h := fixedHash(cv)
			c := int(table[h])
			table[h] = uint16(s)
			if c >= s || binary.LittleEndian.Uint32(src[c:]) != cv {
				continue
			}
			lit = emitMatch(w, src, codes, coded, lit, s, c)
		}
	}
	if coded {
		w.codedRun(codes, lit, len(src))
	} else {
		w.literals(src[lit:])
	}
	return anchors
}

// emitMatch writes src[lit:s] as literals (from codes if coded, see
// literalCodes) and then the match of src[s:] with src[c:], extended
// backwards as far as it holds, and returns where the match ends. It is
// apart from anchorTokens' loop so that the loop's values stay in
// registers.
func emitMatch(w *bitWriter, src, codes []byte, coded bool, lit, s, c int) int {
	n := fixedMinMatch + matchLen(src[c+fixedMinMatch:], src[s+fixedMinMatch:min(len(src), s+fixedMaxMatch)])
	for s > lit && c > 0 && n < fixedMaxMatch && src[s-1] == src[c-1] {
		s, c, n = s-1, c-1, n+1
	}
	if coded {
		w.codedRun(codes, lit, s)
	} else {
		w.literals(src[lit:s])
	}
	w.match(n, s-c)
	return s + n
}

// delimiterWord returns a word with bit k set for each delimiter
// src[j+k], k < 64; src has at least 8 bytes.
func delimiterWord(src []byte, j int) uint64 {
	if j+64 <= len(src) {
		p := src[j : j+64]
		return laneBits(delimiters(binary.LittleEndian.Uint64(p[0:8]))) |
			laneBits(delimiters(binary.LittleEndian.Uint64(p[8:16])))<<8 |
			laneBits(delimiters(binary.LittleEndian.Uint64(p[16:24])))<<16 |
			laneBits(delimiters(binary.LittleEndian.Uint64(p[24:32])))<<24 |
			laneBits(delimiters(binary.LittleEndian.Uint64(p[32:40])))<<32 |
			laneBits(delimiters(binary.LittleEndian.Uint64(p[40:48])))<<40 |
			laneBits(delimiters(binary.LittleEndian.Uint64(p[48:56])))<<48 |
			laneBits(delimiters(binary.LittleEndian.Uint64(p[56:64])))<<56
	}
	var m uint64
	k := 0
	for ; j+k+8 <= len(src); k += 8 {
		m |= laneBits(delimiters(binary.LittleEndian.Uint64(src[j+k:]))) << k
	}
	if r := len(src) - j - k; r > 0 {
		// The last eight bytes, less the lanes already seen.
		m |= laneBits(delimiters(binary.LittleEndian.Uint64(src[len(src)-8:]))) >> (8 - r) << k
	}
	return m
}

// laneBits gathers the high bit of each byte lane of m (the only bits
// set) into the low byte, lane 0 in bit 0: the multiplication moves the
// bit of lane k to bit 56+k, and no two partial products collide.
func laneBits(m uint64) uint64 {
	return (m >> 7) * 0x0102040810204080 >> 56
}

// denseTokens writes src as literals and greedy matches found through a
// hash of the next 4 bytes at (nearly) every position, the way
// klauspost's level 1 searches: slower than anchorTokens, but it finds
// repeats in input without delimiters.
func (f *fixedDeflater) denseTokens(w *bitWriter, src []byte) {
	table := &f.table
	lit := 0 // first byte not yet written
	last := len(src) - fixedMinMatch
	// Two positions per turn: their lookups do not depend on each other,
	// so the CPU overlaps them. The last position is searched only as the
	// second of a pair; a turn that would start there is left to literals,
	// which loses at most one 4-byte match.
	for s := 0; s < last; {
		cv0 := binary.LittleEndian.Uint32(src[s:])
		cv1 := binary.LittleEndian.Uint32(src[s+1:])
		h0, h1 := fixedHash(cv0), fixedHash(cv1)
		c0 := int(table[h0])
		table[h0] = uint16(s)
		c1 := int(table[h1])
		table[h1] = uint16(s + 1)
		cand := c0
		switch {
		case c0 < s && binary.LittleEndian.Uint32(src[c0:]) == cv0:
		case c1 <= s && binary.LittleEndian.Uint32(src[c1:]) == cv1:
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
			table[fixedHash(binary.LittleEndian.Uint32(src[p:]))] = uint16(p)
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
