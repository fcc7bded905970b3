package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/transport"
)

// checkLine fails unless line is one JSON value in valid UTF-8 with no
// line break, that a strict reader takes.
func checkLine(t *testing.T, payload, line []byte) {
	t.Helper()
	if !utf8.Valid(line) || !json.Valid(line) || bytes.ContainsAny(line, "\n\r") {
		t.Fatalf("payload %q wrote line %q, not one line of valid JSON", payload, line)
	}
	if hasLoneSurrogate(line) {
		t.Fatalf("payload %q wrote line %q holding a lone surrogate escape", payload, line)
	}
}

// Binary payloads, as a RAW relay passes them on, each give one line that
// parses as JSON; a payload that is already clean JSON is left as it is
// and text becomes the string it was.
func TestConsoleLinesParseWhateverThePayload(t *testing.T) {
	payloads := []string{
		"a\x00b",
		"\xff\xfe",
		"\xed\xa0\x80",         // a lone surrogate, encoded
		`{"s":"\ud800"}`,       // a lone surrogate, escaped
		`{"s":"\udc00\ud800"}`, // halves in the wrong order
		"{\"s\":\"\xff\"}",     // JSON but not UTF-8
		"{\"s\":\"a\x00b\"}",   // a raw NUL in a JSON string
		"\"unterminated",
		"",
		"\x1b[31mred\x1b[0m",
		"\u2028",
		`{"ok":"\ud83d\ude00","n":1}`, // a proper pair: kept
		`{"ok":true}`,
		"plain text",
	}
	var out bytes.Buffer
	s := New(&out)
	bs := make([]transport.Batch, len(payloads))
	for i, p := range payloads {
		bs[i] = transport.Batch{ID: int64(i + 1), Payload: []byte(p)}
	}
	res, err := s.Send(context.Background(), bs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("batch %d: %+v", i+1, r)
		}
	}
	sc := bufio.NewScanner(&out)
	n := 0
	for ; sc.Scan(); n++ {
		if n >= len(payloads) {
			t.Fatalf("more lines than payloads: %q", sc.Text())
		}
		line, p := sc.Bytes(), []byte(payloads[n])
		checkLine(t, p, line)
		if utf8.Valid(p) && json.Valid(p) && !hasLoneSurrogate(p) {
			if string(line) != string(p) {
				t.Errorf("clean JSON %q written as %q", p, line)
			}
			continue
		}
		var back string
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatalf("payload %q: line %q is not a JSON string: %v", p, line, err)
		}
		if want := strings.ToValidUTF8(string(p), "\ufffd"); utf8.Valid(p) && back != want {
			t.Errorf("payload %q read back as %q", p, back)
		}
	}
	if n != len(payloads) {
		t.Fatalf("%d lines for %d payloads", n, len(payloads))
	}
}

// FuzzAppendJSON: whatever the payload, the line is valid JSON on one
// line; clean one-line JSON is kept byte for byte; text that is valid
// UTF-8 reads back as itself.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{"", "{}", "a\x00b", "\xff", "\xed\xa0\x80", `"\ud800"`, `["\ud800\udc00"]`,
		"{\n\"a\":1}", `"\u`, "\u2029", `{"a":"\\ud800"}`, " 1 "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		line := AppendJSON([]byte("x"), p)
		if line[0] != 'x' {
			t.Fatal("dst overwritten")
		}
		line = line[1:]
		checkLine(t, p, line)
		clean := utf8.Valid(p) && json.Valid(p) && !hasLoneSurrogate(p)
		if clean && !bytes.ContainsAny(p, "\n\r") && string(line) != string(bytes.TrimSpace(p)) {
			t.Fatalf("clean JSON %q written as %q", p, line)
		}
		if !clean && utf8.Valid(p) {
			var back string
			if err := json.Unmarshal(line, &back); err != nil || back != string(p) {
				t.Fatalf("text %q: line %q reads back as %q, %v", p, line, back, err)
			}
		}
	})
}
