package httpin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// format is how a body is cut into records.
type format int

const (
	// formatAuto: by the first byte that is not a space: [ a JSON array,
	// { one JSON object (the whole body) or else NDJSON, anything else
	// plain lines.
	formatAuto format = iota
	formatNDJSON
	formatLines
)

// formatOf picks the format from a Content-Type: NDJSON types are NDJSON,
// text/plain is lines, anything else (application/json included) auto.
func formatOf(contentType string) format {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return formatAuto
	}
	switch mt {
	case "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines":
		return formatNDJSON
	case "text/plain":
		return formatLines
	}
	return formatAuto
}

// recordError is the first bad record of a body: its 1-based line and
// what is wrong, never its bytes (nothing a sender sends is echoed).
type recordError struct {
	Line   int
	Reason string
}

func (e *recordError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// decoder turns bodies into event payloads: JSON objects compacted to one
// line as sent, plain lines as {"_ts":<ms>,"message":"<line>"}. Not safe
// for concurrent use.
type decoder struct {
	buf bytes.Buffer
	// invalid counts invalid UTF-8 sequences replaced in plain lines.
	invalid int64
}

// decode appends body's events to out. On a bad record it returns the
// events so far and the record's error; the caller keeps none of them.
func (d *decoder) decode(out [][]byte, body []byte, f format, recv time.Time) ([][]byte, *recordError) {
	if f == formatAuto {
		switch firstByte(body) {
		case '[':
			return d.array(out, body)
		case '{':
			if json.Valid(body) {
				return d.record(out, body, 1+bytes.Count(body[:len(body)-len(trimLeft(body))], nl))
			}
			f = formatNDJSON
		case 0:
			return out, nil
		default:
			f = formatLines
		}
	}
	line := 0
	for len(body) > 0 {
		var l []byte
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			l, body = body[:i], body[i+1:]
		} else {
			l, body = body, nil
		}
		line++
		l = bytes.TrimSuffix(l, cr)
		if f == formatLines {
			if len(l) == 0 && len(body) == 0 {
				break // the final newline
			}
			ev := append(make([]byte, 0, len(l)+40), `{"_ts":`...)
			ev = jsonenc.AppendInt(ev, recv.UnixMilli())
			ev = append(ev, `,"message":`...)
			var n int
			ev, n = jsonenc.AppendString(ev, l)
			d.invalid += int64(n)
			out = append(out, append(ev, '}'))
			continue
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue // blank lines between NDJSON records
		}
		var err *recordError
		if out, err = d.record(out, l, line); err != nil {
			return out, err
		}
	}
	return out, nil
}

var (
	nl = []byte{'\n'}
	cr = []byte{'\r'}
)

// array appends each element of a JSON array as one record.
func (d *decoder) array(out [][]byte, body []byte) ([][]byte, *recordError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	lineAt := func(off int64) int { return 1 + bytes.Count(body[:min(int(off), len(body))], nl) }
	if _, err := dec.Token(); err != nil { // [
		return out, &recordError{Line: 1, Reason: "not a JSON array"}
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out, &recordError{Line: lineAt(dec.InputOffset()), Reason: "not JSON"}
		}
		start := dec.InputOffset() - int64(len(raw))
		var err *recordError
		if out, err = d.record(out, raw, lineAt(start)); err != nil {
			return out, err
		}
	}
	if _, err := dec.Token(); err != nil { // ]
		return out, &recordError{Line: lineAt(dec.InputOffset()), Reason: "the JSON array is not closed"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return out, &recordError{Line: lineAt(dec.InputOffset()), Reason: "data after the JSON array"}
	}
	return out, nil
}

// record checks one JSON record (an object, UTF-8) and appends it
// compacted.
func (d *decoder) record(out [][]byte, rec []byte, line int) ([][]byte, *recordError) {
	if firstByte(rec) != '{' {
		return out, &recordError{Line: line, Reason: "not a JSON object"}
	}
	if !utf8.Valid(rec) {
		return out, &recordError{Line: line, Reason: "not UTF-8"}
	}
	d.buf.Reset()
	if err := json.Compact(&d.buf, rec); err != nil {
		return out, &recordError{Line: line, Reason: "not JSON"}
	}
	return append(out, bytes.Clone(d.buf.Bytes())), nil
}

// firstByte is the first byte that is not JSON white space, 0 for none.
func firstByte(b []byte) byte {
	if t := trimLeft(b); len(t) > 0 {
		return t[0]
	}
	return 0
}

func trimLeft(b []byte) []byte {
	return bytes.TrimLeft(b, " \t\r\n")
}

// contentEncoding names the body's compression: "", "gzip" or "zstd";
// ok false for anything else.
func contentEncoding(h string) (string, bool) {
	switch e := strings.ToLower(strings.TrimSpace(h)); e {
	case "", "identity":
		return "", true
	case "gzip", "x-gzip":
		return "gzip", true
	case "zstd":
		return "zstd", true
	default:
		return e, false
	}
}
