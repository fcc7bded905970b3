package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong reports a line longer than a LineReader's limit. The
// stream is then out of step and must be closed.
var ErrLineTooLong = errors.New("line too long")

// LineReader reads lines terminated by "\n", "\r\n" or "\r", never holding
// more than its limit in memory. It is not safe for concurrent use.
type LineReader struct {
	br    *bufio.Reader
	limit int
	line  []byte // reused between calls
	// skipLF is set after a line ended in '\r': a '\n' that follows belongs
	// to the same terminator. It is checked lazily, on the next read, so a
	// lone '\r' terminator never blocks waiting for one more byte.
	skipLF bool
}

// NewLineReader returns a reader of lines of at most limit bytes (not
// counting the terminator). limit <= 0 means MaxReplyBytes.
func NewLineReader(r io.Reader, limit int) *LineReader {
	if limit <= 0 {
		limit = MaxReplyBytes
	}
	size := 4 << 10
	if limit > 64<<10 {
		size = 64 << 10
	}
	return &LineReader{br: bufio.NewReaderSize(r, size), limit: limit}
}

// NewLineReaderSize is NewLineReader with a read buffer of size bytes
// (at least 16), for a server holding many connections: the buffer is
// per connection, lines longer than it are still read whole.
func NewLineReaderSize(r io.Reader, limit, size int) *LineReader {
	if limit <= 0 {
		limit = MaxReplyBytes
	}
	return &LineReader{br: bufio.NewReaderSize(r, max(16, size)), limit: limit}
}

// SetLimit changes the longest line accepted from the next read on (a
// server reads the auth line under a small limit, then requests under
// the configured one). n <= 0 means MaxReplyBytes.
func (lr *LineReader) SetLimit(n int) {
	if n <= 0 {
		n = MaxReplyBytes
	}
	lr.limit = n
}

// Fill blocks until at least one byte is buffered (the start of the next
// line) or the read fails; it reads no line.
func (lr *LineReader) Fill() error {
	_, err := lr.br.Peek(1)
	return err
}

// Shrink drops the line buffer when it grew beyond n bytes, so one long
// line does not pin its memory for the life of the connection. The last
// line returned is invalid after Shrink.
func (lr *LineReader) Shrink(n int) {
	if cap(lr.line) > n {
		lr.line = nil
	}
}

// Limit is the longest line the reader accepts.
func (lr *LineReader) Limit() int { return lr.limit }

// Buffered reports how many bytes are read from the stream but not yet
// returned.
func (lr *LineReader) Buffered() int { return lr.br.Buffered() }

// LineBuffered reports whether the next ReadLine can return without
// waiting for the stream: a whole line is already buffered. Peers that
// pipeline use it to flush their own output only before a read that may
// block; a partial line does not count, since its end may only come in
// answer to what they have yet to flush.
func (lr *LineReader) LineBuffered() bool {
	buf, _ := lr.br.Peek(lr.br.Buffered())
	if lr.skipLF && len(buf) > 0 && buf[0] == '\n' {
		buf = buf[1:]
	}
	return indexEOL(buf) >= 0
}

// ReadRawLine returns the next line without its terminator and untrimmed.
// The slice is valid until the next call. At end of stream a last line
// without a terminator is returned first (as Java's readLine does), then
// io.EOF. A line longer than the limit returns an error wrapping
// ErrLineTooLong.
func (lr *LineReader) ReadRawLine() ([]byte, error) {
	lr.line = lr.line[:0]
	if lr.skipLF {
		lr.skipLF = false
		b, err := lr.br.ReadByte()
		if err != nil {
			return nil, err
		}
		if b != '\n' {
			_ = lr.br.UnreadByte()
		}
	}
	for {
		if lr.br.Buffered() == 0 {
			if _, err := lr.br.Peek(1); err != nil {
				if err == io.EOF && len(lr.line) > 0 {
					return lr.line, nil
				}
				return nil, err
			}
		}
		chunk, _ := lr.br.Peek(lr.br.Buffered())
		i := indexEOL(chunk)
		if i < 0 {
			if len(lr.line)+len(chunk) > lr.limit {
				return nil, fmt.Errorf("read line: %w (limit %d bytes)", ErrLineTooLong, lr.limit)
			}
			lr.line = append(lr.line, chunk...)
			_, _ = lr.br.Discard(len(chunk))
			continue
		}
		if len(lr.line)+i > lr.limit {
			return nil, fmt.Errorf("read line: %w (limit %d bytes)", ErrLineTooLong, lr.limit)
		}
		lr.line = append(lr.line, chunk[:i]...)
		if chunk[i] == '\r' {
			if i+1 < len(chunk) {
				if chunk[i+1] == '\n' {
					i++
				}
			} else {
				lr.skipLF = true
			}
		}
		_, _ = lr.br.Discard(i + 1)
		return lr.line, nil
	}
}

// ReadLine returns the next line without its terminator, trimmed of
// leading and trailing spaces and control characters as Java's
// String.trim does ("  ACK\r\n" reads as "ACK"). See ReadRawLine.
func (lr *LineReader) ReadLine() ([]byte, error) {
	line, err := lr.ReadRawLine()
	if err != nil {
		return nil, err
	}
	return Trim(line), nil
}

// Trim removes leading and trailing bytes <= ' ', like Java's String.trim.
func Trim(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && b[i] <= ' ' {
		i++
	}
	for j > i && b[j-1] <= ' ' {
		j--
	}
	return b[i:j]
}

// indexEOL finds the first '\n' or '\r'.
func indexEOL(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	head := b
	if lf >= 0 {
		head = b[:lf]
	}
	if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
		return cr
	}
	return lf
}
