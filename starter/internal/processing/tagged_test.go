package processing

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
)

// mapModelChain is c's steps built again, run on the map model only: what
// the tagged model must match, byte for byte.
func mapModelChain(t testing.TB, steps ...Step) *Chain {
	t.Helper()
	c := mustChain(t, steps...)
	c.tagged = false
	return c
}

// sameOutput runs events through a chain in each model and fails on any
// difference in the events out or the counters.
func sameOutput(t *testing.T, steps []Step, events []input.Event) {
	t.Helper()
	tagged, plain := mustChain(t, steps...), mapModelChain(t, steps...)
	clone := func() []input.Event {
		out := make([]input.Event, len(events))
		for i, ev := range events {
			out[i] = input.Event{Payload: slices.Clone(ev.Payload), Pos: ev.Pos}
		}
		return out
	}
	got, want := tagged.Process(clone(), 0, t0), plain.Process(clone(), 0, t0)
	if len(got) != len(want) {
		t.Fatalf("tagged model: %d events out, map model %d", len(got), len(want))
	}
	for i := range got {
		if string(got[i].Payload) != string(want[i].Payload) || got[i].Pos.Key != want[i].Pos.Key {
			t.Fatalf("event %d: tagged model %q, map model %q (in: %q)", i, got[i].Payload, want[i].Payload, events[i].Payload)
		}
	}
	if gs, ws := tagged.Stats(), plain.Stats(); !reflect.DeepEqual(gs, ws) {
		t.Fatalf("counters: tagged model %+v, map model %+v", gs, ws)
	}
}

func TestTaggedModelMatchesMapModel(t *testing.T) {
	events := append(benchEvents(60),
		line(`{"b":1,"a":2,"b":3,"msg":"x@y.io","password":"hunter2","token":{"k":[1,"2"]}}`, 1),
		line(`{"level":"debug","n":-0,"f":1.50,"g":1.5,"h":1e400,"i":12345678901234567890,"e":1.5e-07}`, 2),
		line(`{"nested":{"z":"\u2028\ud800<>&","card":"4111 1111 1111 1111"},"arr":[{"email":"a@b.io"},null,true]}`, 3),
		line(`not json`, 4),
		line(`"a string"`, 5),
		line(`{"payload":{"already":"parsed"}}`, 6),
		line(strings.Repeat("[", 600)+strings.Repeat("]", 600), 7),
		line(`{"a":`+strings.Repeat(`{"a":`, 509)+`1`+strings.Repeat("}", 510), 8),
		input.Event{Payload: []byte(`{"_file":"f","payload":42}`)},
		input.Event{Payload: []byte(`{"_file":"f"}`)},
		input.Event{Payload: []byte(`[1,2]`)},
		input.Event{Payload: []byte(`{"_f\"ile":"x","\u00e9\u2028":"y","\u0001":1,"payload":"{\"k\\\"ey\":1,\"é\":2,\"a\\u0001\":3}"}`)},
		input.Event{Payload: []byte(` {"payload" : "{\"level\":\"info\"}" , "site":{"x":1}} `)},
	)
	for name, steps := range map[string][]Step{
		"typical": {
			{Parse: &ParseConfig{Format: "json"}},
			{Drop: `payload.level == "debug"`},
			{Redact: &RedactConfig{Detectors: []string{"email", "credit-card"}}},
			{Set: map[string]string{"site": "plant-7", "env": "prod"}},
		},
		"parse into a field, drop on error": {
			{Parse: &ParseConfig{Format: "json", Target: "doc.body", OnError: OnErrorDrop}},
			{Keep: `doc.body.level in ["info", "warn", "error"] || doc?.body?.a != nil`},
		},
		"nested set over a string": {
			{Parse: &ParseConfig{Format: "json"}},
			{Set: map[string]string{"payload.msg.x": "over", "payload.new.deep": "v", "_file": "g"}},
		},
		"every detector, secret pairs": {
			{Parse: &ParseConfig{Format: "json"}},
			{Redact: &RedactConfig{Detectors: DetectorNames(), Fields: []string{"payload", "missing"}}},
		},
		"a filter reading the whole payload": {
			{Parse: &ParseConfig{Format: "json"}},
			{Drop: `len(payload) > 5 || "level" in payload`},
			{Set: map[string]string{"s": "t"}},
		},
		"a filter on $env": {
			{Drop: `$env.payload == "x"`},
			{Parse: &ParseConfig{Format: "json"}},
		},
		"then steps of the map model": {
			{Parse: &ParseConfig{Format: "json"}},
			{Redact: &RedactConfig{Detectors: []string{"email"}}},
			{Truncate: &TruncateConfig{Fields: []string{"payload.msg"}, MaxBytes: 20}},
			{Set: map[string]string{"after": "map"}},
			{Drop: `payload.level == "warn"`},
		},
		"parse logfmt first": {
			{Parse: &ParseConfig{Format: "logfmt"}},
			{Set: map[string]string{"a": "b"}},
		},
	} {
		t.Run(name, func(t *testing.T) { sameOutput(t, steps, events) })
	}
}

func TestChainReadsTheTaggedModelWhenItsFirstStepRunsOnIt(t *testing.T) {
	for _, tc := range []struct {
		first Step
		want  bool
	}{
		{Step{Parse: &ParseConfig{Format: "json"}}, true},
		{Step{Drop: `payload.level == "debug"`}, true},
		{Step{Redact: &RedactConfig{Detectors: []string{"email"}}}, true},
		{Step{Set: map[string]string{"a": "b"}}, true},
		{Step{Parse: &ParseConfig{Format: "logfmt"}}, false},
		{Step{Drop: `$env.payload == "x"`}, false},
		{Step{Remove: []string{"a"}}, false},
		{Step{Dedup: &DedupConfig{}}, false},
	} {
		if c := mustChain(t, tc.first); c.tagged != tc.want {
			t.Errorf("first step %s: tagged = %v, want %v", tc.first.Kind(), c.tagged, tc.want)
		}
	}
}

func TestValidateNoSteps(t *testing.T) {
	if err := Validate(nil); err != nil {
		t.Fatalf("Validate(nil) = %v", err)
	}
}

func TestStringTestOf(t *testing.T) {
	for src, want := range map[string]string{
		`payload.level == "debug"`:          `payload.level == "debug"`,
		`"debug" != payload["level"]`:       `payload.level != "debug"`,
		`a.b.c == "x"`:                      `a.b.c == "x"`,
		`payload == "x"`:                    ``,
		`payload?.level == "x"`:             ``,
		`payload.level == 1`:                ``,
		`payload.level in ["x"]`:            ``,
		`$env.payload == "x"`:               ``,
		`payload[_line] == "x"`:             ``,
		`payload.level == "x" && _line > 0`: ``,
		`payload.level.upper() == "X"`:      ``,
		`payload.level == payload.name`:     ``,
	} {
		x, err := compileExpr(src, true)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got := ""
		if x.eq != nil {
			op := "=="
			if x.eq.negate {
				op = "!="
			}
			got = x.eq.path.String() + " " + op + " " + strconv.Quote(x.eq.want)
		}
		if got != want {
			t.Errorf("%s: string test %q, want %q", src, got, want)
		}
	}
}

func TestExprReads(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string // the paths read, sorted; "*" for the whole environment
	}{
		{`payload.level == "debug"`, "payload.level"},
		{`payload["level"] == "x" && payload.a.b > 1`, "payload.a.b payload.level"},
		{`payload?.a?.b == nil`, "payload.a.b"},
		{`payload.a == 1 || payload.a.b == 2`, "payload.a"},
		{`len(payload) > 1`, "payload"},
		{`"a" in payload || payload.a == 1`, "payload"},
		{`payload[_line] == 1`, "_line payload"},
		{`payload.tags[0] == "x"`, "payload.tags"},
		{`all(payload.items, .n > 1)`, "payload.items"},
		{`$env.payload == "x"`, "*"},
		{`$env["payload"] == "x"`, "*"},
		{`len($env) > 1`, "*"},
	} {
		x, err := compileExpr(tc.src, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		got := "*"
		if x.reads != nil {
			var paths []string
			var walk func(prefix string, r *reads)
			walk = func(prefix string, r *reads) {
				if r.all {
					paths = append(paths, prefix)
					return
				}
				for k, kid := range r.kids {
					walk(strings.TrimPrefix(prefix+"."+k, "."), kid)
				}
			}
			walk("", x.reads)
			slices.Sort(paths)
			got = strings.Join(paths, " ")
		}
		if got != tc.want {
			t.Errorf("%s reads %q, want %q", tc.src, got, tc.want)
		}
	}
}

// FuzzTaggedCodec checks the tagged model's reader and writer against the
// map model's: the same errors, the same values, the same bytes out.
func FuzzTaggedCodec(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x\u00e9\ud83d\ude00"],"c":{"d":-1.5e3}}`, `"\ud800"`, `[1,2`, `{"a":1}x`,
		`12345678901234567890`, `1.50`, `"\u2028<>&"`, "\"\xff\"", `-0`, `1e400`, `{"b":1,"a":2,"b":3}`, `1.5e-07`, `{"":{}}`,
		`{"k\"ey":1,"é":2,"\u0001":3,"\u2028":4}`, "{\"\xff\":1}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var st docStore
		want, wantErr := readJSONString(s)
		got, err := readDoc(s, &st)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("tagged reader: %v; map reader: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if v := toAny(&got); !reflect.DeepEqual(v, want) {
			t.Fatalf("tagged value %#v; map value %#v", v, want)
		}
		if a, b := nodeText(&got), text(want); a != b {
			t.Fatalf("text %q; map model %q", a, b)
		}
		gotOut, gotErr := appendNode(nil, &got, 0)
		wantOut, wantErr := writeJSON(nil, want)
		if (gotErr == nil) != (wantErr == nil) || string(gotOut) != string(wantOut) {
			t.Fatalf("tagged writer %q (%v); map writer %q (%v)", gotOut, gotErr, wantOut, wantErr)
		}
		// As an event: the object reader.
		top, err := readDocObject(s, &st)
		m := map[string]any{}
		mErr := readObjectInto([]byte(s), m)
		if (err == nil) != (mErr == nil) {
			t.Fatalf("tagged object reader: %v; map reader: %v", err, mErr)
		}
		if err == nil && !reflect.DeepEqual(toAny(&top), m) {
			t.Fatalf("tagged object %#v; map %#v", toAny(&top), m)
		}
	})
}

// FuzzTaggedExpression runs any expression that compiles on an event in
// both models: the same result or the same error.
func FuzzTaggedExpression(f *testing.F) {
	for _, s := range []string{`payload.level == "debug"`, `payload.n > 2`, `len(payload) > 3`, `payload?.a?.b == nil`, `payload.a.b.c`,
		`_line % 2 == 0`, `"level" in payload`, `payload.level matches "^d"`, `payload.tags[1] == "y"`, `$env.payload.n == 3`,
		`payload.level != "debug"`, `"debug" == payload.level`, `payload.level == "info"`, `payload.n == "3"`, `payload.a == "x"`,
		`payload.tags.x == "y"`, `payload.level.x == "y"`, `payload.none == "y"`, `_line.x == "y"`, `nothere.x != "y"`} {
		f.Add(s, `{"_line":7,"payload":{"level":"debug","n":3,"tags":["x","y"],"a":{"b":1.5}}}`)
	}
	f.Fuzz(func(t *testing.T, src, event string) {
		x, err := compileExpr(src, true)
		if err != nil || x.reads == nil {
			return
		}
		var st docStore
		top, err := readDocObject(event, &st)
		if err != nil {
			return
		}
		m := map[string]any{}
		if err := readObjectInto([]byte(event), m); err != nil {
			t.Fatalf("map reader fails where the tagged one does not: %v", err)
		}
		got, gotErr := x.testNode(&top)
		want, wantErr := x.test(m)
		if got != want || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s on %s: tagged model %v (%v); map model %v (%v)", src, event, got, gotErr, want, wantErr)
		}
	})
}

// FuzzTaggedChain runs any event through the typical chain and a few
// more steps in both models: the same bytes out, the same counters.
func FuzzTaggedChain(f *testing.F) {
	for _, s := range []string{`{"payload":"{\"level\":\"info\",\"msg\":\"a@b.io\"}"}`, `{"payload":"x"}`, `not json`, `{}`,
		`{"payload":"{\"password\":{\"a\":1},\"card\":\"4111 1111 1111 1111\",\"b\":1,\"b\":2}","site":1}`} {
		f.Add([]byte(s))
	}
	steps := []Step{
		{Parse: &ParseConfig{Format: "json"}},
		{Drop: `payload.level == "debug"`},
		{Redact: &RedactConfig{Detectors: DetectorNames()}},
		{Set: map[string]string{"site": "s", "payload.x.y": "z"}},
	}
	tagged, plain := mustChain(f, steps...), mapModelChain(f, steps...)
	f.Fuzz(func(t *testing.T, b []byte) {
		got := tagged.Process([]input.Event{{Payload: slices.Clone(b)}}, 0, t0)
		want := plain.Process([]input.Event{{Payload: slices.Clone(b)}}, 0, t0)
		if string(got[0].Payload) != string(want[0].Payload) {
			t.Fatalf("tagged model %q; map model %q", got[0].Payload, want[0].Payload)
		}
		if gs, ws := tagged.Stats(), plain.Stats(); !reflect.DeepEqual(gs, ws) {
			t.Fatalf("counters: tagged model %+v, map model %+v", gs, ws)
		}
	})
}

// FuzzCardPrefilter: whatever findCards finds, the prefilter lets through.
func FuzzCardPrefilter(f *testing.F) {
	for _, s := range []string{"4111 1111 1111 1111", "4111-1111-1111-1111", "x4111111111111111", "k12=34567 v=8 4111111111111111",
		"1 2 3 4 5 6 7 8 9 0 1 2 3", "378282246310005"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := digitRun(s, 13)
		if len(findCards(s)) > 0 && !got {
			t.Fatalf("findCards finds a card in %q the prefilter turns away", s)
		}
		if want := digitRunIn(s, 13); got != want {
			t.Fatalf("digitRun(%q) = %v, a look at every byte says %v", s, got, want)
		}
	})
}

func TestCardPrefilter(t *testing.T) {
	for s, want := range map[string]bool{
		"paid with 4111 1111 1111 1111":                      true,
		"4111-1111-1111-1":                                   true,
		"request 1234 served in 234 ms for session s-001234": false,
		"k12=34567 k3=99812 k77=1234 seq 000001234":          false,
		"1234 5678 9012 3":                                   true,
		"1234  5678 9012 3":                                  false,
	} {
		if got := digitRun(s, 13); got != want {
			t.Errorf("digitRun(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzSkipPlain holds the eight-bytes-at-a-time scan to a look at every
// byte.
func FuzzSkipPlain(f *testing.F) {
	for _, s := range []string{"", "abcdefgh", `abcdefgh"`, "abc\\defghijk", "abcdefg\x1f", "abcdefghijklmno\xc3\xa9", "\x7f\x20\x21\x22"} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, s string, i int) {
		if i < 0 || i > len(s) {
			return
		}
		want := i
		for want < len(s) && plain[s[want]] {
			want++
		}
		if got := skipPlain(s, i); got != want {
			t.Fatalf("skipPlain(%q, %d) = %d, want %d", s, i, got, want)
		}
	})
}
