package httpin

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzDecode: whatever the body and format, decoding never panics; on
// success every event is one line of valid JSON, an object, and JSON
// records are the body's records (for NDJSON: as many as non-blank
// lines); on failure the line is within the body.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n"), uint8(0))
	f.Add([]byte("[{\"a\":1},\n{\"b\":[1,2]}]"), uint8(0))
	f.Add([]byte("{\n\"a\": 1\n}"), uint8(0))
	f.Add([]byte("plain\nlines\r\n"), uint8(2))
	f.Add([]byte("[1,\n{}]"), uint8(0))
	f.Add([]byte("{\"a\":\"\xff\"}"), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, fm uint8) {
		fmt := format(fm % 3)
		var d decoder
		evs, err := d.decode(nil, body, fmt, time.UnixMilli(1))
		if err != nil {
			if err.Line < 1 || err.Line > 1+bytes.Count(body, nl) {
				t.Fatalf("line %d of a %d-line body", err.Line, 1+bytes.Count(body, nl))
			}
			return
		}
		for _, e := range evs {
			if bytes.ContainsAny(e, "\r\n") {
				t.Fatalf("event holds a line break: %q", e)
			}
			var o map[string]any
			if json.Unmarshal(e, &o) != nil {
				t.Fatalf("event is not a JSON object: %q", e)
			}
		}
		if fmt == formatNDJSON {
			n := 0
			for _, l := range bytes.Split(body, nl) {
				if len(bytes.TrimSpace(l)) > 0 {
					n++
				}
			}
			if n != len(evs) {
				t.Fatalf("%d records from %d non-blank lines", len(evs), n)
			}
		}
	})
}

func TestFormatOf(t *testing.T) {
	for ct, want := range map[string]format{
		"":                          formatAuto,
		"application/json":          formatAuto,
		"application/x-ndjson":      formatNDJSON,
		"application/jsonl":         formatNDJSON,
		"text/plain; charset=utf-8": formatLines,
		"garbage;;":                 formatAuto,
	} {
		if got := formatOf(ct); got != want {
			t.Errorf("%q: %d, want %d", ct, got, want)
		}
	}
}
