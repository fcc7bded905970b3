package syslog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Framing errors end the connection: after them the stream has no frame
// boundary to resynchronise on.
var (
	// ErrFrameTooLarge: an octet count above max-message-bytes.
	ErrFrameTooLarge = errors.New("octet count larger than max-message-bytes")
	// ErrBadOctetCount: an octet-counted stream with something other than
	// digits and a space where a count belongs.
	ErrBadOctetCount = errors.New("malformed octet count")
	// ErrTruncatedFrame: the stream ended inside an octet-counted frame.
	ErrTruncatedFrame = errors.New("stream ended inside an octet-counted frame")
)

// Framing of one stream (RFC 6587), fixed by its first byte: a digit
// starts octet counting ("LEN SP MSG"), anything else non-transparent
// framing (messages end at LF).
const (
	framingUnknown = iota
	framingOctet
	framingLF
)

// framer splits a stream into messages. Not safe for concurrent use.
type framer struct {
	r       *bufio.Reader
	max     int
	framing int
	buf     []byte
}

func newFramer(r io.Reader, maxMsg int) *framer {
	return &framer{r: bufio.NewReaderSize(r, 32<<10), max: maxMsg}
}

// Next returns the next message, valid until the following call, and
// whether it was cut to max-message-bytes (LF framing only; the rest of
// that line is skipped). At the end of the stream it returns io.EOF, after
// a last LF frame without its LF; a framing error ends the stream for good.
func (f *framer) Next() (msg []byte, truncated bool, err error) {
	if f.framing == framingUnknown {
		c, err := f.r.Peek(1)
		if err != nil {
			return nil, false, err
		}
		f.framing = framingLF
		if isDigit(c[0]) {
			f.framing = framingOctet
		}
	}
	if f.framing == framingOctet {
		msg, err := f.nextOctet()
		return msg, false, err
	}
	return f.nextLF()
}

func (f *framer) nextOctet() ([]byte, error) {
	n, digits := 0, 0
	for {
		c, err := f.r.ReadByte()
		if err != nil {
			if digits > 0 && errors.Is(err, io.EOF) {
				return nil, ErrTruncatedFrame
			}
			return nil, err
		}
		if c == ' ' && digits > 0 {
			break
		}
		// The errors give positions, not the bytes: they are the sender's.
		if digits == 0 && c == '0' {
			return nil, fmt.Errorf("%w: a leading zero", ErrBadOctetCount)
		}
		if !isDigit(c) {
			return nil, fmt.Errorf("%w: a byte that is neither a digit nor a space after %d digits", ErrBadOctetCount, digits)
		}
		n = n*10 + int(c-'0')
		digits++
		if n > f.max {
			return nil, fmt.Errorf("%w: over %d after %d digits", ErrFrameTooLarge, f.max, digits)
		}
	}
	if cap(f.buf) < n {
		f.buf = make([]byte, n)
	}
	f.buf = f.buf[:n]
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ErrTruncatedFrame
		}
		return nil, err
	}
	return f.buf, nil
}

func (f *framer) nextLF() ([]byte, bool, error) {
	f.buf = f.buf[:0]
	cut := false // bytes past max were skipped
	for {
		chunk, err := f.r.ReadSlice('\n')
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
		}
		if room := f.max - len(f.buf); len(body) > room {
			body, cut = body[:room], true
		}
		f.buf = append(f.buf, body...)
		switch {
		case err == nil:
			return trimCR(f.buf), cut, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(f.buf) > 0 || cut):
			return trimCR(f.buf), cut, nil
		default:
			return nil, false, err
		}
	}
}

// trimCR drops a CR that ended the line before its LF.
func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
