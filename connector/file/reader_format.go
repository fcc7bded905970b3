package file

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// The event JSON of the RAW format is built by hand: field order and spelling
// must match the Java agent's Jackson output byte for byte, and the hot
// path must not reflect or allocate per field.
//
//	{"_index":0,"_file":"/abs/path","_line":12,"_offset":345,"_ts":1700000000000,"payload":"text"}

// appendObjectHead appends everything before the payload value.
func appendObjectHead(dst []byte, idx int, fileJSON []byte, line, end, ts int64) []byte {
	dst = append(dst, `{"_index":`...)
	dst = jsonenc.AppendInt(dst, int64(idx))
	dst = append(dst, `,"_file":`...)
	dst = append(dst, fileJSON...)
	dst = append(dst, `,"_line":`...)
	dst = jsonenc.AppendInt(dst, line)
	dst = append(dst, `,"_offset":`...)
	dst = jsonenc.AppendInt(dst, end)
	dst = append(dst, `,"_ts":`...)
	dst = jsonenc.AppendInt(dst, ts)
	return append(dst, `,"payload":`...)
}

// formatter writes payload values. It owns scratch buffers and is used by
// one goroutine.
type formatter struct {
	codec   codec
	dec     *decoder
	jsonOut bool
	compact bytes.Buffer

	invalid int64 // invalid sequences seen, published by the Input
}

// text returns the UTF-8 text of a raw line for pattern matching and JSON
// parsing. For UTF-8 the raw bytes are returned as they are (invalid
// sequences are replaced when the payload is written).
func (f *formatter) text(raw []byte, bigEndian bool) (txt []byte, decoded bool) {
	switch f.codec.kind {
	case encUTF8:
		return raw, false
	case encLatin1:
		if isASCII(raw) {
			return raw, false
		}
		out := make([]byte, 0, len(raw)*2)
		for _, b := range raw {
			out = utf8.AppendRune(out, rune(b))
		}
		return out, true
	}
	out, bad := f.dec.decode(raw, bigEndian)
	f.invalid += int64(bad)
	return out, true
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendPayload appends the payload value for one line. raw is the line
// in the file's encoding; txt, when non-nil, is its UTF-8 text already
// decoded (multiline mode decodes once for pattern matching).
func (f *formatter) appendPayload(dst, raw, txt []byte, bigEndian bool) []byte {
	if txt == nil {
		if f.codec.kind == encLatin1 && !f.jsonOut {
			dst = append(dst, '"')
			dst = jsonenc.AppendLatin1Content(dst, raw)
			return append(dst, '"')
		}
		txt, _ = f.text(raw, bigEndian)
	}
	if f.jsonOut && f.appendJSON(&dst, txt) {
		return dst
	}
	var bad int
	dst, bad = jsonenc.AppendString(dst, txt)
	if f.codec.kind == encUTF8 {
		// Other charsets counted their replacements while decoding.
		f.invalid += int64(bad)
	}
	return dst
}

// appendJSON appends txt as a JSON value when it is one (NDJSON), compacted
// so the event stays on one line. It reports false for anything else,
// including empty lines and invalid UTF-8, which are then sent as text.
func (f *formatter) appendJSON(dst *[]byte, txt []byte) bool {
	if !maybeJSON(txt) || !utf8.Valid(txt) {
		return false
	}
	f.compact.Reset()
	if err := json.Compact(&f.compact, txt); err != nil {
		return false
	}
	*dst = append(*dst, f.compact.Bytes()...)
	return true
}

// maybeJSON is a cheap pre-check that rejects most plain-text lines by
// their first and last bytes, so they do not pay for a failed parse (the
// JSON scanner allocates an error for each).
func maybeJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return false
	}
	first, last := b[0], b[len(b)-1]
	switch {
	case first == '{':
		return last == '}'
	case first == '[':
		return last == ']'
	case first == '"':
		return last == '"'
	case first == 't' || first == 'f':
		return last == 'e'
	case first == 'n':
		return last == 'l'
	case first == '-' || first >= '0' && first <= '9':
		for _, c := range b {
			if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
				return false
			}
		}
		return true
	}
	return false
}

// appendGroup appends a multiline group: one object for a single line
// (the same shape as without multiline), else an array with _index 0..n-1.
// extra (the configured fields) ends every object.
func (f *formatter) appendGroup(dst []byte, fileJSON []byte, g []multiline.Line, bigEndian bool, extra []byte) []byte {
	if len(g) > 1 {
		dst = append(dst, '[')
	}
	for i, l := range g {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendObjectHead(dst, i, fileJSON, l.Num, l.End, l.TS)
		dst = f.appendPayload(dst, nil, l.Text, bigEndian)
		dst = append(dst, extra...)
		dst = append(dst, '}')
	}
	if len(g) > 1 {
		dst = append(dst, ']')
	}
	return dst
}

// arena hands out event payloads and states carved from shared 64 KiB
// blocks: two allocations per event would dominate the read path. Events
// are formatted straight into the block (begin/end); if one outgrows the
// room left, append moves the block, which is still correct because
// earlier slices keep pointing at the old array. Slices are capped (full
// slice expression) so an append by a consumer copies instead of
// overwriting a neighbour.
type arena struct{ buf []byte }

const arenaBlock = 64 << 10

// begin makes room for about n bytes and returns the buffer to append to.
func (a *arena) begin(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		size := arenaBlock
		if n > arenaBlock/4 {
			size = n // a long line gets its own block
		}
		a.buf = make([]byte, 0, size)
	}
	return a.buf
}

// end takes what was appended since begin (start = len at begin).
func (a *arena) end(buf []byte, start int) []byte {
	a.buf = buf
	return buf[start:len(buf):len(buf)]
}

// copy stores b in the arena.
func (a *arena) copy(b []byte) []byte {
	buf := a.begin(len(b))
	start := len(buf)
	return a.end(append(buf, b...), start)
}
