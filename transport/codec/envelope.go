package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// envelope is the PACKET JSON object. Pointers tell absent from empty.
type envelope struct {
	Version     *int    `json:"version"`
	Payload     *string `json:"payload"`
	Compression *string `json:"compression"`
	Encryption  *string `json:"encryption"`
	IV          *string `json:"iv"`
}

// fields are the envelope's values as the decoder uses them. They alias
// the packet on the fast path, so a canonical packet is read without
// copying its fields. Absent and null read as absent (has* false).
type fields struct {
	payload, compression, encryption, iv []byte
	hasPayload, hasIV                    bool
}

// parseEnvelope reads a PACKET envelope. The exact layout that this
// package and the Java agent emit is read by a fast path; anything else
// (other field order, spacing, escapes, extra fields) goes through
// encoding/json, so every valid JSON spelling is still accepted.
func parseEnvelope(b []byte) (fields, error) {
	if f, ok := parseCanonical(b); ok {
		return f, nil
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return fields{}, fmt.Errorf("%w: not a JSON envelope: %s", ErrMalformed, jsonErrorShape(err))
	}
	return env.fields(), nil
}

// jsonErrorShape describes a JSON decoding error by where and of which
// kind, never by the bytes: encoding/json quotes a character or a number
// of its input, and the packet is the client's.
func jsonErrorShape(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte offset %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q has the wrong type at byte offset %d", te.Field, te.Offset)
	default:
		return "unexpected end or invalid JSON"
	}
}

func (env envelope) fields() fields {
	var f fields
	if env.Payload != nil {
		f.payload, f.hasPayload = []byte(*env.Payload), true
	}
	if env.Compression != nil {
		f.compression = []byte(*env.Compression)
	}
	if env.Encryption != nil {
		f.encryption = []byte(*env.Encryption)
	}
	if env.IV != nil {
		f.iv, f.hasIV = []byte(*env.IV), true
	}
	return f
}

// parseCanonical matches
//
//	{"version":1,"payload":"P","compression":"C","encryption":"E","iv":null}
//	{"version":1,"payload":"P","compression":"C","encryption":"E","iv":"I"}
//
// where P, C, E, I are printable ASCII without '"' or '\\' (base64 and
// the codec names always are). ok is false on any other input.
func parseCanonical(b []byte) (f fields, ok bool) {
	if b, ok = cutPrefix(b, `{"version":1,"payload":"`); !ok {
		return f, false
	}
	if f.payload, b, ok = plainString(b); !ok {
		return fields{}, false
	}
	if b, ok = cutPrefix(b, `,"compression":"`); !ok {
		return fields{}, false
	}
	if f.compression, b, ok = plainString(b); !ok {
		return fields{}, false
	}
	if b, ok = cutPrefix(b, `,"encryption":"`); !ok {
		return fields{}, false
	}
	if f.encryption, b, ok = plainString(b); !ok {
		return fields{}, false
	}
	if b, ok = cutPrefix(b, `,"iv":`); !ok {
		return fields{}, false
	}
	f.hasPayload = true
	if string(b) == "null}" {
		return f, true
	}
	if b, ok = cutPrefix(b, `"`); !ok {
		return fields{}, false
	}
	if f.iv, b, ok = plainString(b); !ok || string(b) != "}" {
		return fields{}, false
	}
	f.hasIV = true
	return f, true
}

func cutPrefix(b []byte, p string) ([]byte, bool) {
	if len(b) < len(p) || string(b[:len(p)]) != p {
		return b, false
	}
	return b[len(p):], true
}

// plainString reads up to the closing '"' of a string of printable ASCII
// without escapes (encoding/json would rewrite anything else), and
// returns it (aliasing b) and the rest after the quote.
func plainString(b []byte) (s, rest []byte, ok bool) {
	end := bytes.IndexByte(b, '"')
	if end < 0 {
		return nil, b, false
	}
	for _, c := range b[:end] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return nil, b, false
		}
	}
	return b[:end:end], b[end+1:], true
}
