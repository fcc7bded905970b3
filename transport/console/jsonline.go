package console

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// AppendJSON appends payload to dst as one line's worth of JSON, without
// the line end, so that every line written parses as JSON:
//
//   - a payload that is valid JSON text, valid UTF-8 and has no lone
//     surrogate escape ("\ud800" alone) is written as it is, trimmed of
//     surrounding spaces and compacted if it spans lines;
//   - anything else (plain text, NUL or other control bytes, invalid
//     UTF-8, a JSON fragment) is written as a JSON string: control bytes
//     escaped, each invalid UTF-8 byte replaced by U+FFFD.
//
// Only the line written is affected; what is sent elsewhere is not.
func AppendJSON(dst, payload []byte) []byte {
	if utf8.Valid(payload) && json.Valid(payload) && !hasLoneSurrogate(payload) {
		if bytes.IndexByte(payload, '\n') < 0 && bytes.IndexByte(payload, '\r') < 0 {
			return append(dst, bytes.TrimSpace(payload)...)
		}
		buf := bytes.NewBuffer(dst)
		// Cannot fail: payload is valid JSON.
		if json.Compact(buf, payload) == nil {
			return buf.Bytes()
		}
		dst = buf.Bytes()[:len(dst)]
	}
	return appendString(dst, payload)
}

const hexDigits = "0123456789abcdef"

// appendString appends b as a JSON string literal. Bytes that are not
// UTF-8 become U+FFFD; control bytes and U+2028/U+2029 are escaped, the
// latter so the line is also a valid JavaScript literal.
func appendString(dst, b []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			dst = append(dst, b[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// hasLoneSurrogate reports whether valid JSON text holds a \u escape of a
// surrogate that is not half of a pair: parsers disagree on those (some
// refuse the line, others change the text), so such a payload is quoted.
func hasLoneSurrogate(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+1 < len(b) && b[i+1] == 'u' {
				r, ok := hex4(b, i+2)
				switch {
				case !ok:
					return true // not valid JSON; json.Valid said it was
				case r >= 0xd800 && r < 0xdc00:
					// A high half needs a low half next.
					if i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
						return true
					}
					low, ok := hex4(b, i+8)
					if !ok || low < 0xdc00 || low > 0xdfff {
						return true
					}
					i += 11
					continue
				case r >= 0xdc00 && r <= 0xdfff:
					return true
				}
				i += 5
				continue
			}
			i++ // the escaped byte
		}
	}
	return false
}

// hex4 reads four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
