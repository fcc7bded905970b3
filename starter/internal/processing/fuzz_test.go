package processing

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
)

// FuzzParsers feeds any text to every parser: none may panic, and what
// one returns must encode as JSON (the event goes on as JSON).
func FuzzParsers(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `a=1 b="x y" c`, `1,"2,3",4`, `<34>1 2026-01-02T03:04:05Z h a 1 m - hi`,
		`<13>Jan  2 03:04:05 host app[1]: msg`, `a="unterminated`, `[1,2`, "\xff\xfe", ``} {
		f.Add(s)
	}
	re := regexp.MustCompile(`^(?P<a>\w+)\s(?P<b>.*)$`)
	parsers := map[string]func(string) (any, error){
		"json": parseJSON, "logfmt": parseLogfmt, "syslog": parseSyslog,
		"csv": csvParser([]string{"a", "b", "c"}, ','), "regex": regexParser(re),
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, p := range parsers {
			v, err := p(s)
			if err != nil {
				continue
			}
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("%s: result does not encode: %v", name, err)
			}
		}
	})
}

// FuzzExpression compiles any text as a filter and runs what compiles on
// a small event: no panic, and a run gives a boolean or an error.
func FuzzExpression(f *testing.F) {
	for _, s := range []string{`payload.level == "debug"`, `payload contains "x"`, `len(payload) > 3`, `1 +`, `payload[0]`,
		`_line % 2 == 0`, `payload.a.b.c`, `map(1..3, # * 2)`, `"a" matches "("`} {
		f.Add(s)
	}
	ev := map[string]any{"payload": map[string]any{"level": "debug", "n": json.Number("3")}, "_line": json.Number("7")}
	f.Fuzz(func(t *testing.T, src string) {
		x, err := compileExpr(src, true)
		if err != nil {
			return
		}
		_, _ = x.test(ev)
	})
}

// FuzzChain runs any event bytes through a chain with every kind of
// processor but dedup: no panic, one event out per event in (kept,
// changed, or position-only), positions untouched, and every payload out
// is a JSON object or the input's own bytes.
func FuzzChain(f *testing.F) {
	for _, s := range []string{`{"payload":"{\"level\":\"info\",\"msg\":\"a@b.io\"}"}`, `{"payload":"x"}`, `not json`, `{}`, `[]`, `null`} {
		f.Add([]byte(s))
	}
	c := mustChain(f,
		Step{Parse: &ParseConfig{Format: "json"}},
		Step{Drop: `payload.level == "debug"`},
		Step{Redact: &RedactConfig{Detectors: DetectorNames()}},
		Step{Set: map[string]string{"site": "s"}},
		Step{Truncate: &TruncateConfig{Fields: []string{"payload.msg"}, MaxBytes: 16}},
		Step{Timestamp: &TimestampConfig{Field: "payload.t"}},
		Step{Sample: &SampleConfig{OneIn: 2}},
	)
	f.Fuzz(func(t *testing.T, b []byte) {
		in := []input.Event{{Payload: append([]byte(nil), b...), Pos: input.Position{Key: "k", State: []byte("1")}}}
		out := c.Process(in, 0, t0)
		if len(out) != 1 || out[0].Pos.Key != "k" {
			t.Fatalf("one event in, %d out (%+v)", len(out), out)
		}
		p := out[0].Payload
		if p == nil || string(p) == string(b) {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil {
			t.Fatalf("payload out is not a JSON object: %v: %q", err, p)
		}
	})
}

// FuzzCodec checks the event codec against encoding/json: the same
// inputs are valid, they read to the same values, and what the codec
// writes reads back (with encoding/json) to the same value again.
func FuzzCodec(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x\u00e9\ud83d\ude00"],"c":{"d":-1.5e3}}`, `"\ud800"`, `[1,2`, `{"a":1}x`,
		`12345678901234567890`, `1.50`, `"\u2028<>&"`, "\"\xff\"", `-0`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := readJSON(b)
		var want any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		stdErr := d.Decode(&want)
		if stdErr == nil && d.More() {
			stdErr = errors.New("trailing")
		}
		if stdErr == nil {
			var rest any
			if d.Decode(&rest) != io.EOF {
				stdErr = errors.New("trailing")
			}
		}
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("codec error %v, encoding/json error %v for %q", err, stdErr, b)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Fatalf("codec read %#v, encoding/json %#v", got, want)
		}
		out, err := writeJSON(nil, got)
		if err != nil {
			return // a number encoding/json cannot write either (1e400 reads as json.Number, written as is)
		}
		var back any
		d = json.NewDecoder(bytes.NewReader(out))
		d.UseNumber()
		if err := d.Decode(&back); err != nil {
			t.Fatalf("codec wrote invalid JSON %q: %v", out, err)
		}
		if !reflect.DeepEqual(normalize(back), normalize(want)) {
			t.Fatalf("round trip %q changed the value: %#v vs %#v", out, back, want)
		}
	})
}

// normalize turns every number into its float64 value (or its text when
// it has none), so readers that type numbers differently compare.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	case int64:
		return float64(x)
	}
	return v
}
