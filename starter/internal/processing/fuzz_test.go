package processing

import (
	"encoding/json"
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
