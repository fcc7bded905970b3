// Package lines reads a stream (a pipe, a child's stdout) line by line
// within a bound, and turns each line into event JSON, for the stdin and
// exec inputs.
package lines

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// Formats.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// Read calls emit with every line of r (without its LF or CRLF), a final
// unterminated line included, until EOF (nil) or an error of r or emit.
// A line longer than maxLine is cut to maxLine (truncated true) and the
// rest skipped, so memory stays bounded. The line is only valid during
// emit.
func Read(r io.Reader, maxLine int, emit func(line []byte, truncated bool) error) error {
	br := bufio.NewReaderSize(r, min(maxLine, 64<<10)+1)
	var long []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skipping {
				long = append(long, chunk...)
				if len(long) >= maxLine {
					if e := emit(long[:maxLine], true); e != nil {
						return e
					}
					long, skipping = long[:0], true
				}
			}
			continue
		}
		if len(chunk) > 0 || len(long) > 0 {
			if !skipping {
				line := chunk
				if len(long) > 0 {
					long = append(long, chunk...)
					line = long
				}
				line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
				truncated := len(line) > maxLine
				if truncated {
					line = line[:maxLine]
				}
				if e := emit(line, truncated); e != nil {
					return e
				}
			}
			long, skipping = long[:0], false
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// Encoder builds the event JSON of one line:
//
//	{"_ts":1700000000000,"message":"the line"}
//
// with Extra (already JSON: `"key":value` pairs) after _ts. With
// FormatJSON a line that is a JSON object is the event itself, compacted;
// any other line is as in text, with "parse_error". Not safe for
// concurrent use.
type Encoder struct {
	JSON bool
	// Extra is inserted after _ts, e.g. `,"stream":"stdout"`.
	Extra []byte
	// Invalid counts invalid UTF-8 sequences replaced; ParseErrors the
	// lines FormatJSON could not take as an object.
	Invalid, ParseErrors int64
	buf                  bytes.Buffer
}

// Append appends the event of line, received at recv, to dst.
func (e *Encoder) Append(dst, line []byte, recv time.Time) []byte {
	perr := ""
	if e.JSON {
		t := bytes.TrimSpace(line)
		switch {
		case len(t) == 0 || t[0] != '{':
			perr = "not a JSON object"
		case !utf8.Valid(t):
			perr = "not UTF-8"
		default:
			e.buf.Reset()
			if json.Compact(&e.buf, t) == nil {
				return append(dst, e.buf.Bytes()...)
			}
			perr = "not JSON"
		}
		e.ParseErrors++
	}
	dst = append(dst, `{"_ts":`...)
	dst = jsonenc.AppendInt(dst, recv.UnixMilli())
	dst = append(dst, e.Extra...)
	if perr != "" {
		dst = append(dst, `,"parse_error":"`...)
		dst = append(dst, perr...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"message":`...)
	dst, n := jsonenc.AppendString(dst, line)
	e.Invalid += int64(n)
	return append(dst, '}')
}
