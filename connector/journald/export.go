package journald

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// The journal export format, as journalctl --output=export writes it: an
// entry is a run of fields ended by an empty line. A field is either
//
//	NAME=value\n                         (a value without a newline)
//	NAME\n<uint64 LE length><bytes>\n    (any bytes: binary, newlines)
//
// Field names are [A-Z0-9_] (the journal accepts no others), at most 64
// bytes.

// maxNameBytes bounds a field name (the journal's own limit is 64).
const maxNameBytes = 64

// errSyntax marks input that is not the export format.
var errSyntax = errors.New("not journal export format")

// field is one field of an entry; Name and Value point into the entry's
// buffer.
type field struct {
	Name, Value []byte
	// Truncated: the value was longer than the parser's limit and only
	// its first limit bytes are kept.
	Truncated bool
}

// rawEntry is one parsed entry. The parser reuses it: the caller copies
// what it keeps before the next call.
type rawEntry struct {
	buf    []byte
	Fields []field
	// Bytes is how many bytes of the stream the entry took.
	Bytes int64
}

// parser reads entries from an export-format stream. Memory is bounded:
// a value longer than limit is read to its end but only limit bytes are
// kept, and a line-form value is bounded the same way.
type parser struct {
	r     *bufio.Reader
	limit int
	off   int64 // stream offset, for error messages
}

func newParser(r io.Reader, limit int) *parser {
	return &parser{r: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// next parses one entry into e. It returns io.EOF at a clean end (between
// entries), io.ErrUnexpectedEOF when the stream ends inside one, and an
// error wrapping errSyntax, with the stream offset, for anything else.
func (p *parser) next(e *rawEntry) error {
	e.buf, e.Fields, e.Bytes = e.buf[:0], e.Fields[:0], 0
	start := p.off
	type span struct{ name, value [2]int }
	var spans []span // offsets into e.buf, resolved once buf stops moving
	var truncated []bool
	for {
		nameStart := len(e.buf)
		c, err := p.r.ReadByte()
		if err != nil {
			if err == io.EOF && len(spans) == 0 && p.off == start {
				return io.EOF
			}
			return p.eof(err)
		}
		p.off++
		if c == '\n' {
			if len(spans) == 0 {
				// Empty lines between entries carry nothing; journalctl
				// writes none, but they are harmless.
				start = p.off
				continue
			}
			break
		}
		// The name, up to '=' (line form) or '\n' (binary form).
		for {
			if c == '=' || c == '\n' {
				break
			}
			if !validNameByte(c) {
				return p.syntax("byte %q in a field name", c)
			}
			if len(e.buf)-nameStart >= maxNameBytes {
				return p.syntax("field name longer than %d bytes", maxNameBytes)
			}
			e.buf = append(e.buf, c)
			if c, err = p.r.ReadByte(); err != nil {
				return p.eof(err)
			}
			p.off++
		}
		nameEnd := len(e.buf)
		if nameEnd == nameStart {
			return p.syntax("empty field name")
		}
		var cut bool
		if c == '=' {
			cut, err = p.lineValue(e)
		} else {
			cut, err = p.binaryValue(e)
		}
		if err != nil {
			return err
		}
		spans = append(spans, span{[2]int{nameStart, nameEnd}, [2]int{nameEnd, len(e.buf)}})
		truncated = append(truncated, cut)
	}
	for i, s := range spans {
		e.Fields = append(e.Fields, field{
			Name:      e.buf[s.name[0]:s.name[1]:s.name[1]],
			Value:     e.buf[s.value[0]:s.value[1]:s.value[1]],
			Truncated: truncated[i],
		})
	}
	e.Bytes = p.off - start
	return nil
}

// lineValue reads a value up to its newline, keeping at most limit bytes.
func (p *parser) lineValue(e *rawEntry) (truncated bool, err error) {
	kept := 0
	for {
		chunk, err := p.r.ReadSlice('\n')
		p.off += int64(len(chunk))
		done := err == nil
		if done {
			chunk = chunk[:len(chunk)-1]
		} else if !errors.Is(err, bufio.ErrBufferFull) {
			return false, p.eof(err)
		}
		if room := p.limit - kept; room > 0 {
			n := min(room, len(chunk))
			e.buf = append(e.buf, chunk[:n]...)
			kept += n
			truncated = truncated || n < len(chunk)
		} else if len(chunk) > 0 {
			truncated = true
		}
		if done {
			return truncated, nil
		}
	}
}

// binaryValue reads the length-prefixed form, keeping at most limit bytes
// and skipping the rest.
func (p *parser) binaryValue(e *rawEntry) (truncated bool, err error) {
	var lb [8]byte
	if _, err := io.ReadFull(p.r, lb[:]); err != nil {
		return false, p.eof(err)
	}
	p.off += 8
	n := binary.LittleEndian.Uint64(lb[:])
	keep := n
	if keep > uint64(p.limit) {
		keep, truncated = uint64(p.limit), true
	}
	at := len(e.buf)
	e.buf = slices.Grow(e.buf, int(keep))[:at+int(keep)]
	if _, err := io.ReadFull(p.r, e.buf[at:]); err != nil {
		return false, p.eof(err)
	}
	p.off += int64(keep)
	if rest := n - keep; rest > 0 {
		d, err := p.r.Discard(int(min(rest, 1<<62)))
		p.off += int64(d)
		if err != nil {
			return false, p.eof(err)
		}
		if uint64(d) < rest { // only for lengths beyond 2^62
			return false, p.syntax("binary field of %d bytes", n)
		}
	}
	c, err := p.r.ReadByte()
	if err != nil {
		return false, p.eof(err)
	}
	p.off++
	if c != '\n' {
		return false, p.syntax("binary field of %d bytes not followed by a newline", n)
	}
	return truncated, nil
}

func (p *parser) eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (p *parser) syntax(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errSyntax, p.off, fmt.Sprintf(format, args...))
}

func validNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
