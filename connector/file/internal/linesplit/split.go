package linesplit

import "bytes"

// Splitter holds the per-file state of line splitting: the partial line
// carried between chunks. Chunks themselves are borrowed from the caller
// (a read buffer shared by all files) and never kept after Stop or the
// end of the chunk.
type Splitter struct {
	maxLine   int
	width     int  // 1, or 2 for UTF-16
	bigEndian bool // UTF-16 byte order

	carry      []byte // kept bytes of the partial line (≤ maxLine)
	partialRaw int64  // raw bytes of the partial line, kept or skipped
	truncating bool   // the partial line is already longer than maxLine

	buf []byte // current chunk
	i   int    // next unprocessed index in buf
	pos int64  // file offset of buf[0]
}

// New returns a splitter for lines of at most maxLine bytes. width is 1
// for byte-oriented encodings and 2 for UTF-16 (bigEndian picks the order).
func New(maxLine, width int, bigEndian bool) *Splitter {
	s := &Splitter{}
	s.Configure(maxLine, width, bigEndian)
	return s
}

// Configure changes the encoding parameters; it drops any partial line.
// Used when a UTF-16 byte-order mark is found at the start of a file.
func (s *Splitter) Configure(maxLine, width int, bigEndian bool) {
	if width != 2 {
		width = 1
	}
	maxLine &^= width - 1
	if maxLine < width {
		maxLine = width
	}
	s.maxLine, s.width, s.bigEndian = maxLine, width, bigEndian
	s.Reset()
}

// Width reports the code-unit width (1 or 2).
func (s *Splitter) Width() int { return s.width }

// Reset drops the partial line and the current chunk, e.g. when the file
// is closed: the partial line will be read again from the file.
func (s *Splitter) Reset() {
	s.carry = s.carry[:0]
	if cap(s.carry) > 64<<10 {
		// Do not pin a huge buffer for a file that had one long line.
		s.carry = nil
	}
	s.partialRaw = 0
	s.truncating = false
	s.buf, s.i = nil, 0
}

// Partial reports how many raw bytes of an unterminated line are held
// (kept or skipped); the caller's read position minus this is the start
// of that line.
func (s *Splitter) Partial() int64 { return s.partialRaw }

// Feed starts a chunk read at file offset pos, which must be the offset
// just after the previous chunk (or the line start after Reset/Stop). It
// returns how many bytes of buf it accepts: for UTF-16 an odd trailing byte
// is left for the next read, so code units never straddle chunks.
func (s *Splitter) Feed(buf []byte, pos int64) int {
	n := len(buf) &^ (s.width - 1)
	s.buf, s.i, s.pos = buf[:n], 0, pos
	return n
}

// Next returns the next complete line of the current chunk. The line is
// valid until the next call. end is the file offset just past the
// newline. When the chunk holds no further newline, its tail is moved into
// the partial line and ok is false.
func (s *Splitter) Next() (line []byte, end int64, truncated, ok bool) {
	if s.i >= len(s.buf) {
		s.buf = nil
		return nil, 0, false, false
	}
	rest := s.buf[s.i:]
	j, nl := s.findNewline(rest)
	if j < 0 {
		s.hold(rest)
		s.buf, s.i = nil, 0
		return nil, 0, false, false
	}
	seg := rest[:j]
	end = s.pos + int64(s.i+j+nl)
	s.i += j + nl
	if len(s.carry) == 0 && !s.truncating {
		line = seg
		if len(line) > s.maxLine {
			line, truncated = line[:s.maxLine], true
		}
	} else {
		s.hold(seg)
		line, truncated = s.carry, s.truncating
		s.carry = s.carry[:0]
	}
	s.partialRaw = 0
	s.truncating = false
	if !truncated {
		line = s.trimCR(line)
	}
	return line, end, truncated, true
}

// Stop abandons the rest of the current chunk after the last line
// returned (e.g. the poll budget is used up) and returns the file offset
// to resume reading from. Any partial line is dropped with it.
func (s *Splitter) Stop() int64 {
	resume := s.pos + int64(s.i)
	if s.buf == nil {
		resume = -1
	}
	s.buf, s.i = nil, 0
	return resume
}

// hold appends b to the partial line, keeping at most maxLine bytes.
func (s *Splitter) hold(b []byte) {
	s.partialRaw += int64(len(b))
	room := s.maxLine - len(s.carry)
	if len(b) > room {
		b = b[:room]
		s.truncating = true
	}
	s.carry = append(s.carry, b...)
}

// findNewline returns the index of the newline code unit in b and its
// width, or -1. b starts at a code-unit boundary.
func (s *Splitter) findNewline(b []byte) (int, int) {
	if s.width == 1 {
		return bytes.IndexByte(b, '\n'), 1
	}
	for k := 0; k+1 < len(b); {
		idx := bytes.IndexByte(b[k:], '\n')
		if idx < 0 {
			return -1, 2
		}
		j := k + idx
		if s.bigEndian {
			// 0x00 0x0A: the newline byte is the second of its unit.
			if j&1 == 1 && b[j-1] == 0 {
				return j - 1, 2
			}
		} else if j&1 == 0 && j+1 < len(b) && b[j+1] == 0 {
			return j, 2
		}
		k = j + 1
	}
	return -1, 2
}

func (s *Splitter) trimCR(line []byte) []byte {
	n := len(line)
	switch {
	case s.width == 1:
		if n > 0 && line[n-1] == '\r' {
			return line[:n-1]
		}
	case s.bigEndian:
		if n >= 2 && line[n-2] == 0 && line[n-1] == '\r' {
			return line[:n-2]
		}
	default:
		if n >= 2 && line[n-2] == '\r' && line[n-1] == 0 {
			return line[:n-2]
		}
	}
	return line
}
