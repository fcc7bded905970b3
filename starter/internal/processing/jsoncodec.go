package processing

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The event codec: a JSON reader into map[string]any / []any / string /
// int64 / float64 / json.Number / bool / nil, and a writer of the same
// with sorted keys, as encoding/json does with SetEscapeHTML(false). It
// exists for speed: every event is read and written once per chain, and
// encoding/json's reflection cost several times the rest of the agent's
// path. Its results are checked against encoding/json by a fuzz test.

// maxDepth bounds nesting, so no input can exhaust the stack.
const maxDepth = 512

type jsonReader struct {
	s     string
	i     int
	depth int
	buf   strings.Builder // the text of escaped strings, see escaped
}

// readJSON parses exactly one JSON value from b (surrounding space
// allowed).
func readJSON(b []byte) (any, error) { return readJSONString(string(b)) }

// readObjectInto parses exactly one JSON object from b into m, which
// must be empty; on an error m holds part of the object.
func readObjectInto(b []byte, m map[string]any) error {
	r := jsonReader{s: string(b)}
	r.space()
	if r.i >= len(r.s) || r.s[r.i] != '{' {
		return errNotObject
	}
	if _, err := r.objectInto(m); err != nil {
		return err
	}
	if err := r.end(); err != nil {
		return err
	}
	return nil
}

// readObjectStringInto is readJSONString for text that holds an
// object, read into m, which must be empty; ok is false when s holds no
// object (m is untouched then). On an error m holds part of the object.
func readObjectStringInto(s string, m map[string]any) (ok bool, err error) {
	r := jsonReader{s: s}
	r.space()
	if r.i >= len(r.s) || r.s[r.i] != '{' {
		return false, nil
	}
	if _, err := r.objectInto(m); err != nil {
		return true, err
	}
	if err := r.end(); err != nil {
		return true, err
	}
	return true, nil
}

// errNotObject: the event JSON is valid or not, but no object.
var errNotObject = errors.New("not an object")

// readJSONString parses exactly one JSON value from s. Keys and strings
// without escapes are substrings of s, so a value costs no allocation of
// its own: whoever keeps one keeps s.
func readJSONString(s string) (any, error) {
	r := jsonReader{s: s}
	v, err := r.value()
	if err != nil {
		return nil, err
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return v, nil
}

func (r *jsonReader) fail() error { return fmt.Errorf("invalid JSON at byte %d", r.i) }

// end checks that only space follows the value read.
func (r *jsonReader) end() error {
	r.space()
	if r.i != len(r.s) {
		return fmt.Errorf("text after the JSON value at byte %d", r.i)
	}
	return nil
}

func (r *jsonReader) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *jsonReader) value() (any, error) {
	r.space()
	if r.i >= len(r.s) {
		return nil, r.fail()
	}
	switch c := r.s[r.i]; {
	case c == '{':
		return r.object()
	case c == '[':
		return r.array()
	case c == '"':
		return r.str()
	case c == 't':
		return true, r.word("true")
	case c == 'f':
		return false, r.word("false")
	case c == 'n':
		return nil, r.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	}
	return nil, r.fail()
}

func (r *jsonReader) word(w string) error {
	if len(r.s)-r.i < len(w) || r.s[r.i:r.i+len(w)] != w {
		return r.fail()
	}
	r.i += len(w)
	return nil
}

func (r *jsonReader) object() (any, error) {
	return r.objectInto(make(map[string]any, 8))
}

// objectInto reads an object's members into m, which the caller gives
// empty (a map it reuses).
func (r *jsonReader) objectInto(m map[string]any) (any, error) {
	if r.depth++; r.depth > maxDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d at byte %d", maxDepth, r.i)
	}
	r.i++ // {
	r.space()
	if r.i < len(r.s) && r.s[r.i] == '}' {
		r.i++
		r.depth--
		return m, nil
	}
	for {
		r.space()
		if r.i >= len(r.s) || r.s[r.i] != '"' {
			return nil, r.fail()
		}
		k, err := r.str()
		if err != nil {
			return nil, err
		}
		r.space()
		if r.i >= len(r.s) || r.s[r.i] != ':' {
			return nil, r.fail()
		}
		r.i++
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		r.space()
		if r.i >= len(r.s) {
			return nil, r.fail()
		}
		switch r.s[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			r.depth--
			return m, nil
		default:
			return nil, r.fail()
		}
	}
}

func (r *jsonReader) array() (any, error) {
	if r.depth++; r.depth > maxDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d at byte %d", maxDepth, r.i)
	}
	r.i++ // [
	a := []any{}
	r.space()
	if r.i < len(r.s) && r.s[r.i] == ']' {
		r.i++
		r.depth--
		return a, nil
	}
	for {
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		r.space()
		if r.i >= len(r.s) {
			return nil, r.fail()
		}
		switch r.s[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			r.depth--
			return a, nil
		default:
			return nil, r.fail()
		}
	}
}

// plain marks the bytes a string's fast path copies as they are: not a
// quote, a backslash, a control character or a non-ASCII byte.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipPlain returns the index of the first byte of s from i that is not
// plain, or len(s): eight bytes at a time while eight are left.
func skipPlain(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(s) {
		b := s[i : i+8]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		q, bs := w^(ones*'"'), w^(ones*'\\')
		// A byte's high bit: it is below 0x20, a quote, a backslash or
		// not ASCII. Only bytes after the first flagged one can be
		// flagged wrongly (a borrow), so the lowest flag is exact.
		m := (w-ones*0x20)&^w | (q-ones)&^q | (bs-ones)&^bs | w
		if m &= highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for i < len(s) && plain[s[i]] {
		i++
	}
	return i
}

// str reads a string; invalid UTF-8 and lone surrogates become U+FFFD,
// as encoding/json does. One without escapes is a substring of the input.
func (r *jsonReader) str() (string, error) {
	s, _, err := r.strPlain()
	return s, err
}

// strPlain is str; clean: the string is ASCII without escapes, so its
// JSON is its text quoted.
func (r *jsonReader) strPlain() (s string, clean bool, err error) {
	r.i++ // "
	start := r.i
	ascii := true
	for r.i < len(r.s) {
		r.i = skipPlain(r.s, r.i)
		if r.i >= len(r.s) {
			break
		}
		c := r.s[r.i]
		if c == '"' {
			s := r.s[start:r.i]
			r.i++
			if ascii {
				return s, true, nil
			}
			return toValidUTF8(s), false, nil
		}
		if c >= utf8.RuneSelf {
			ascii = false
			r.i++
			continue
		}
		break // an escape or a control character
	}
	s, err = r.escaped(start, ascii)
	return s, false, err
}

// escaped finishes a string with escapes, from start (after the quote);
// the text from start to r.i needs none.
func (r *jsonReader) escaped(start int, ascii bool) (string, error) {
	// Every escaped string of the input goes into one buffer: unescaped
	// text is no longer than the input left, so it is sized once. A string
	// handed out is never written again, only appended to.
	b := &r.buf
	if b.Cap() == 0 {
		b.Grow(len(r.s) - start)
	}
	mark := b.Len()
	b.WriteString(r.s[start:r.i])
	for r.i < len(r.s) {
		// Copy the run up to the next byte that needs a look.
		run := r.i
		r.i = skipPlain(r.s, r.i)
		b.WriteString(r.s[run:r.i])
		if r.i >= len(r.s) {
			break
		}
		c := r.s[r.i]
		switch {
		case c == '"':
			r.i++
			if s := b.String()[mark:]; !ascii {
				return toValidUTF8(s), nil
			} else {
				return s, nil
			}
		case c < 0x20:
			return "", r.fail()
		case c != '\\':
			ascii = false
			b.WriteByte(c)
			r.i++
			continue
		}
		if r.i+1 >= len(r.s) {
			return "", r.fail()
		}
		e := r.s[r.i+1]
		r.i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			c1, ok := r.hex4()
			if !ok {
				return "", r.fail()
			}
			if utf16.IsSurrogate(c1) {
				save := r.i
				if r.i+1 < len(r.s) && r.s[r.i] == '\\' && r.s[r.i+1] == 'u' {
					r.i += 2
					if c2, ok := r.hex4(); ok {
						if d := utf16.DecodeRune(c1, c2); d != utf8.RuneError {
							b.WriteRune(d)
							continue
						}
					}
				}
				r.i = save
				c1 = utf8.RuneError
			}
			b.WriteRune(c1)
		default:
			return "", r.fail()
		}
	}
	return "", r.fail()
}

func (r *jsonReader) hex4() (rune, bool) {
	if len(r.s)-r.i < 4 {
		return 0, false
	}
	var v rune
	for k := range 4 {
		switch c := r.s[r.i+k]; {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	r.i += 4
	return v, true
}

// toValidUTF8 replaces each byte of s that is not part of valid UTF-8
// with U+FFFD, as encoding/json does (strings.ToValidUTF8 replaces a
// run with one).
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		c, size := utf8.DecodeRuneInString(s)
		if c == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// number reads a JSON number as int64, float64 or json.Number, as
// numberOf does.
func (r *jsonReader) number() (any, error) {
	s, isInt, err := r.scanNumber()
	if err != nil {
		return nil, err
	}
	if isInt {
		if v, ok := smallInt(s); ok {
			return v, nil
		}
	}
	return numberOf(s, isInt), nil
}

// scanNumber reads a JSON number's text; isInt: it has no fraction or
// exponent.
func (r *jsonReader) scanNumber() (s string, isInt bool, err error) {
	start := r.i
	if r.s[r.i] == '-' {
		r.i++
	}
	if r.i < len(r.s) && r.s[r.i] == '0' {
		r.i++
	} else if r.digits() == 0 {
		return "", false, r.fail()
	}
	isInt = true
	if r.i < len(r.s) && r.s[r.i] == '.' {
		r.i++
		isInt = false
		if r.digits() == 0 {
			return "", false, r.fail()
		}
	}
	if r.i < len(r.s) && (r.s[r.i] == 'e' || r.s[r.i] == 'E') {
		r.i++
		isInt = false
		if r.i < len(r.s) && (r.s[r.i] == '+' || r.s[r.i] == '-') {
			r.i++
		}
		if r.digits() == 0 {
			return "", false, r.fail()
		}
	}
	return r.s[start:r.i], isInt, nil
}

// digits skips decimal digits and says how many.
func (r *jsonReader) digits() int {
	n := 0
	for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
		r.i++
		n++
	}
	return n
}

// smallInt is the value of a JSON integer of at most 18 digits, which
// int64 always holds, without strconv's general path.
func smallInt(s string) (int64, bool) {
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) > 18 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		v = v*10 + int64(s[i]-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// writeJSON appends v's JSON.
func writeJSON(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, fmt.Errorf("value nested deeper than %d", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case string:
		return appendString(dst, x), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case float64:
		return appendFloat(dst, x)
	case map[string]any:
		// Events have a few keys: sort the members on the stack, taken
		// with their values so no key is looked up again.
		var small [16]member
		ms := small[:0]
		for k, v := range x {
			ms = append(ms, member{k, v})
		}
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.k, b.k) })
		dst = append(dst, '{')
		for i := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, ms[i].k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, ms[i].v, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	if n, ok := v.(interface{ String() string }); ok && isJSONNumber(v) {
		return append(dst, n.String()...), nil
	}
	// Anything else an expression produced: encoding/json's view of it.
	b, err := encodeStd(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// member is an object's key and value, as the writer orders them.
type member struct {
	k string
	v any
}

// appendFloat writes f as encoding/json does.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, fmt.Errorf("unsupported value: %v", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does without HTML escaping:
// control characters escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = skipPlain(s, i); i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
