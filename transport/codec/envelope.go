package codec

import (
	"bytes"
	"encoding/json"
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

// parseEnvelope reads a PACKET envelope. The exact layout that this
// package and the Java agent emit is read by a fast path; anything else
// (other field order, spacing, escapes, extra fields) goes through
// encoding/json, so every valid JSON spelling is still accepted.
func parseEnvelope(b []byte) (envelope, error) {
	if env, ok := parseCanonical(b); ok {
		return env, nil
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return env, fmt.Errorf("%w: not a JSON envelope: %v", ErrMalformed, err)
	}
	return env, nil
}

// parseCanonical matches
//
//	{"version":1,"payload":"P","compression":"C","encryption":"E","iv":null}
//	{"version":1,"payload":"P","compression":"C","encryption":"E","iv":"I"}
//
// where P, C, E, I are printable ASCII without '"' or '\\' (base64 and
// the codec names always are). ok is false on any other input.
func parseCanonical(b []byte) (env envelope, ok bool) {
	var payload, comp, enc, iv string
	if b, ok = cutPrefix(b, `{"version":1,"payload":"`); !ok {
		return env, false
	}
	if payload, b, ok = plainString(b); !ok {
		return env, false
	}
	if b, ok = cutPrefix(b, `,"compression":"`); !ok {
		return env, false
	}
	if comp, b, ok = plainString(b); !ok {
		return env, false
	}
	if b, ok = cutPrefix(b, `,"encryption":"`); !ok {
		return env, false
	}
	if enc, b, ok = plainString(b); !ok {
		return env, false
	}
	if b, ok = cutPrefix(b, `,"iv":`); !ok {
		return env, false
	}
	one := 1
	env = envelope{Version: &one, Payload: &payload, Compression: &comp, Encryption: &enc}
	if string(b) == "null}" {
		return env, true
	}
	if b, ok = cutPrefix(b, `"`); !ok {
		return envelope{}, false
	}
	if iv, b, ok = plainString(b); !ok || string(b) != "}" {
		return envelope{}, false
	}
	env.IV = &iv
	return env, true
}

func cutPrefix(b []byte, p string) ([]byte, bool) {
	if len(b) < len(p) || string(b[:len(p)]) != p {
		return b, false
	}
	return b[len(p):], true
}

// plainString reads up to the closing '"' of a string of printable ASCII
// without escapes (encoding/json would rewrite anything else), and
// returns the rest after the quote.
func plainString(b []byte) (s string, rest []byte, ok bool) {
	end := bytes.IndexByte(b, '"')
	if end < 0 {
		return "", b, false
	}
	for _, c := range b[:end] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return "", b, false
		}
	}
	return string(b[:end]), b[end+1:], true
}
