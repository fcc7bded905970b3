package file

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// codecKind picks the decoding path. UTF-8 and ISO-8859-1 are decoded
// inline by the JSON escaper (no extra pass); the rest go through an
// x/text decoder.
type codecKind uint8

const (
	encUTF8 codecKind = iota
	encLatin1
	encUTF16LE
	encUTF16BE
	encUTF16BOM // byte order from the file's BOM, big-endian without one
	encOther    // any ASCII-compatible charset x/text knows (GBK, Shift_JIS, …)
)

// codec describes a resolved `encoding` value.
type codec struct {
	name string // canonical name, for logs
	kind codecKind
	enc  encoding.Encoding // for encOther and UTF-16
}

// aliases maps common spellings that the IANA registry lacks.
var aliases = map[string]string{
	"UTF8":    "UTF-8",
	"ASCII":   "US-ASCII",
	"LATIN-1": "ISO-8859-1",
	"CP1252":  "windows-1252",
	"GB2312":  "GBK", // GBK is a superset; Java decodes GB2312 text the same
}

// lookupEncoding validates an `encoding` value and returns its canonical
// name. Config.Validate uses it.
func lookupEncoding(name string) (string, error) {
	c, err := resolveEncoding(name)
	return c.name, err
}

var errEncoding = errors.New("unsupported encoding")

func resolveEncoding(name string) (codec, error) {
	n := strings.TrimSpace(name)
	if n == "" {
		n = "UTF-8"
	}
	if a, ok := aliases[strings.ToUpper(n)]; ok {
		n = a
	}
	enc, err := ianaindex.IANA.Encoding(n)
	if err != nil || enc == nil {
		return codec{}, fmt.Errorf("%w %q (use UTF-8, ISO-8859-1, UTF-16LE, UTF-16BE, UTF-16, GBK or another IANA charset name)", errEncoding, name)
	}
	canon, _ := ianaindex.IANA.Name(enc)
	switch canon {
	case "UTF-8":
		return codec{name: "UTF-8", kind: encUTF8}, nil
	case "ISO_8859-1:1987":
		return codec{name: "ISO-8859-1", kind: encLatin1}, nil
	case "UTF-16LE":
		return codec{name: canon, kind: encUTF16LE, enc: unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)}, nil
	case "UTF-16BE":
		return codec{name: canon, kind: encUTF16BE, enc: unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)}, nil
	case "UTF-16":
		return codec{name: canon, kind: encUTF16BOM, enc: unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)}, nil
	}
	// Lines are split on byte 0x0A, which is only right for charsets that
	// encode ASCII as ASCII (this rules out EBCDIC and UTF-32).
	probe, err := enc.NewEncoder().Bytes([]byte("a\n"))
	if err != nil || !bytes.Equal(probe, []byte("a\n")) {
		return codec{}, fmt.Errorf("%w %q: lines of this charset cannot be split on byte 0x0A", errEncoding, name)
	}
	return codec{name: canon, kind: encOther, enc: enc}, nil
}

// width is the newline code-unit width for the splitter.
func (c codec) width() int {
	switch c.kind {
	case encUTF16LE, encUTF16BE, encUTF16BOM:
		return 2
	}
	return 1
}

// bom reports the byte-order mark at the start of a file, if any, and for
// UTF-16 with BOM detection the byte order it selects.
func (c codec) bom(head []byte) (n int, bigEndian bool) {
	switch c.kind {
	case encUTF8:
		if bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}) {
			return 3, false
		}
	case encUTF16LE:
		if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) {
			return 2, false
		}
	case encUTF16BE:
		if bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
			return 2, true
		}
		return 0, true
	case encUTF16BOM:
		switch {
		case bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
			return 2, false
		case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
			return 2, true
		}
		return 0, true // RFC 2781: big-endian when there is no BOM
	}
	return 0, false
}

// decoder turns raw line bytes into UTF-8 for the x/text charsets.
// It is owned by one Input (one goroutine).
type decoder struct {
	le, be, other *encoding.Decoder
	out           []byte
}

func newDecoder(c codec) *decoder {
	d := &decoder{}
	switch c.kind {
	case encUTF16LE, encUTF16BE, encUTF16BOM:
		d.le = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM).NewDecoder()
		d.be = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM).NewDecoder()
	case encOther:
		d.other = c.enc.NewDecoder()
	}
	return d
}

var replacement = []byte("\uFFFD")

// decode returns the UTF-8 text of raw and how many replacement
// characters the decoder produced for invalid input. The result is valid
// until the next call.
func (d *decoder) decode(raw []byte, bigEndian bool) ([]byte, int) {
	dec := d.other
	if d.le != nil {
		dec = d.le
		if bigEndian {
			dec = d.be
		}
	}
	dec.Reset()
	if cap(d.out) < 2*len(raw)+16 {
		d.out = make([]byte, 0, 2*len(raw)+16)
	}
	out, _, err := transform.Append(dec, d.out[:0], raw)
	if err != nil {
		// x/text decoders replace invalid input rather than fail; keep
		// the line readable if one ever does.
		out = bytes.ToValidUTF8(raw, replacement)
	}
	d.out = out[:0]
	return out, bytes.Count(out, replacement)
}
