package processing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// TestProcessors runs each processor alone over one file-input event and
// compares the whole resulting event (nil: no payload left).
func TestProcessors(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const head = `"_file":"/var/log/app.log","_line":1,"_ts":1700000000000`
	cases := []struct {
		name    string
		steps   []Step
		payload string
		want    string // whole event; "" = dropped
	}{
		{"parse json", []Step{{Parse: &ParseConfig{Format: "json"}}}, `{"a":1,"b":[true,null]}`,
			`{` + head + `,"payload":{"a":1,"b":[true,null]}}`},
		{"parse json keeps big numbers exact", []Step{{Parse: &ParseConfig{Format: "json"}}}, `{"id":12345678901234567890}`,
			`{` + head + `,"payload":{"id":12345678901234567890}}`},
		{"parse json into a target", []Step{{Parse: &ParseConfig{Format: "json", Target: "doc"}}}, `{"a":1}`,
			`{` + head + `,"doc":{"a":1},"payload":"{\"a\":1}"}`},
		{"parse json error kept and marked", []Step{{Parse: &ParseConfig{Format: "json"}}}, `{"a":`,
			`{"_file":"/var/log/app.log","_line":1,"_parse_error":"json: invalid JSON at byte 5","_ts":1700000000000,"payload":"{\"a\":"}`},
		{"parse json trailing text", []Step{{Parse: &ParseConfig{Format: "json"}}}, `{} x`,
			`{"_file":"/var/log/app.log","_line":1,"_parse_error":"json: text after the JSON value at byte 3","_ts":1700000000000,"payload":"{} x"}`},
		{"parse error dropped", []Step{{Parse: &ParseConfig{Format: "json", OnError: OnErrorDrop}}}, `nope`, ``},
		{"parse logfmt", []Step{{Parse: &ParseConfig{Format: "logfmt"}}}, `level=info msg="a \"b\" c" done`,
			`{` + head + `,"payload":{"done":true,"level":"info","msg":"a \"b\" c"}}`},
		{"parse logfmt unterminated", []Step{{Parse: &ParseConfig{Format: "logfmt"}}}, `a="b`,
			`{"_file":"/var/log/app.log","_line":1,"_parse_error":"logfmt: unterminated quote from byte 2","_ts":1700000000000,"payload":"a=\"b"}`},
		{"parse regex", []Step{{Parse: &ParseConfig{Format: "regex", Pattern: `^(?P<ip>\S+) (?P<verb>[A-Z]+) (?P<path>\S+)`}}}, `10.0.0.1 GET /x`,
			`{` + head + `,"payload":{"ip":"10.0.0.1","path":"/x","verb":"GET"}}`},
		{"parse regex no match", []Step{{Parse: &ParseConfig{Format: "regex", Pattern: `^(?P<n>\d+)$`}}}, `abc`,
			`{"_file":"/var/log/app.log","_line":1,"_parse_error":"regex: pattern does not match","_ts":1700000000000,"payload":"abc"}`},
		{"parse csv", []Step{{Parse: &ParseConfig{Format: "csv", Columns: []string{"a", "b", "c"}}}}, `1,"x,y",3`,
			`{` + head + `,"payload":{"a":"1","b":"x,y","c":"3"}}`},
		{"parse csv semicolon", []Step{{Parse: &ParseConfig{Format: "csv", Columns: []string{"a", "b"}, Delimiter: ";"}}}, `1;2`,
			`{` + head + `,"payload":{"a":"1","b":"2"}}`},
		{"parse csv too many values", []Step{{Parse: &ParseConfig{Format: "csv", Columns: []string{"a"}}}}, `1,2`,
			`{"_file":"/var/log/app.log","_line":1,"_parse_error":"csv: 2 values, 1 columns","_ts":1700000000000,"payload":"1,2"}`},
		{"parse syslog 5424", []Step{{Parse: &ParseConfig{Format: "syslog"}}}, `<34>1 2026-01-02T03:04:05Z host app 12 ID47 [x@1 k="v"] hello`,
			`{` + head + `,"payload":{"appname":"app","facility":4,"hostname":"host","message":"hello","msgid":"ID47","procid":"12","severity":2,"structured_data":{"x@1":{"k":"v"}},"timestamp":"2026-01-02T03:04:05Z"}}`},
		{"drop true", []Step{{Parse: &ParseConfig{Format: "json"}}, {Drop: `payload.level == "debug"`}}, `{"level":"debug"}`, ``},
		{"drop false", []Step{{Parse: &ParseConfig{Format: "json"}}, {Drop: `payload.level == "debug"`}}, `{"level":"info"}`,
			`{` + head + `,"payload":{"level":"info"}}`},
		{"drop on a number", []Step{{Parse: &ParseConfig{Format: "json"}}, {Drop: `payload.status >= 500 || _line > 1`}}, `{"status":503}`, ``},
		{"numbers compare as numbers", []Step{{Parse: &ParseConfig{Format: "json"}}, {SetExpr: map[string]string{"slow": `payload.ms > 250.5`, "next": `_line + 1`}}}, `{"ms":300}`,
			`{` + head + `,"next":2,"payload":{"ms":300},"slow":true}`},
		{"keep false drops", []Step{{Keep: `payload contains "ERROR"`}}, `all good`, ``},
		{"keep true", []Step{{Keep: `payload contains "ERROR"`}}, `ERROR x`, `{` + head + `,"payload":"ERROR x"}`},
		{"filter error keeps", []Step{{Drop: `payload.level == "debug"`}}, `plain`, `{` + head + `,"payload":"plain"}`},
		{"set", []Step{{Set: map[string]string{"site": "plant-7", "meta.env": "prod"}}}, `x`,
			`{` + head + `,"meta":{"env":"prod"},"payload":"x","site":"plant-7"}`},
		{"set-expr", []Step{{SetExpr: map[string]string{"n": `len(payload)`, "up": `upper(payload)`}}}, `abc`,
			`{` + head + `,"n":3,"payload":"abc","up":"ABC"}`},
		{"rename", []Step{{Parse: &ParseConfig{Format: "json"}}, {Rename: map[string]string{"payload.msg": "message"}}}, `{"msg":"m"}`,
			`{` + head + `,"payload":{"message":"m"}}`},
		{"move", []Step{{Parse: &ParseConfig{Format: "json"}}, {Move: map[string]string{"payload.msg": "message"}}}, `{"msg":"m"}`,
			`{` + head + `,"message":"m","payload":{}}`},
		{"copy", []Step{{Copy: map[string]string{"payload": "orig.text"}}}, `m`,
			`{` + head + `,"orig":{"text":"m"},"payload":"m"}`},
		{"remove", []Step{{Remove: []string{"_file", "_line", "nothing.here"}}}, `m`,
			`{"_ts":1700000000000,"payload":"m"}`},
		{"keep fields", []Step{{Parse: &ParseConfig{Format: "json"}}, {KeepFields: []string{"payload.a", "_ts"}}}, `{"a":1,"b":2}`,
			`{"_ts":1700000000000,"payload":{"a":1}}`},
		{"truncate", []Step{{Truncate: &TruncateConfig{MaxBytes: 8}}}, `0123456789`,
			`{` + head + `,"payload":"01234…"}`},
		{"truncate on a character boundary", []Step{{Truncate: &TruncateConfig{MaxBytes: 6, Marker: ptr("+")}}}, `ééééé`,
			`{` + head + `,"payload":"éé+"}`},
		{"truncate short value untouched", []Step{{Truncate: &TruncateConfig{MaxBytes: 80}}}, `short`,
			`{` + head + `,"payload":"short"}`},
		{"redact email and card", []Step{{Redact: &RedactConfig{Detectors: []string{"email", "credit-card"}}}},
			`to a.b@ex.co, card 4111 1111 1111 1111, order 4111 1111 1111 1112`,
			`{` + head + `,"payload":"to *********, card ***************1111, order 4111 1111 1111 1112"}`},
		{"redact keeps last N", []Step{{Redact: &RedactConfig{Detectors: []string{"email"}, KeepLast: ptr(6)}}}, `x bob@example.com`,
			`{` + head + `,"payload":"x *********le.com"}`},
		{"redact remove", []Step{{Redact: &RedactConfig{Detectors: []string{"ipv4", "ipv6"}, Action: "remove"}}}, `from 10.1.2.3 and fe80::1 at 12:30:45`,
			`{` + head + `,"payload":"from  and  at 12:30:45"}`},
		{"redact hash", []Step{{Redact: &RedactConfig{Detectors: []string{"email"}, Action: "hash", HashKeyFile: keyFile}}}, `bob@example.com`,
			`{` + head + `,"payload":"hmac:` + hmacHex("0123456789abcdef0123456789abcdef", "bob@example.com") + `"}`},
		{"redact secrets", []Step{{Redact: &RedactConfig{Detectors: []string{"secret-pair", "bearer-token", "aws-access-key", "jwt", "iban", "private-key"}}}},
			`password=hunter2 Authorization: Bearer abcdefghijkl key AKIAIOSFODNN7EXAMPLE iban GB82 WEST 1234 5698 7654 32`,
			`{` + head + `,"payload":"password=******* Authorization: Bearer ************ key ******************** iban ***************************"}`},
		{"redact object keys", []Step{{Parse: &ParseConfig{Format: "json"}}, {Redact: &RedactConfig{Detectors: []string{"secret-pair"}}}}, `{"user":"u","Password":"pw1","nested":{"api_key":"k"}}`,
			`{` + head + `,"payload":{"Password":"***","nested":{"api_key":"*"},"user":"u"}}`},
		{"redact custom pattern", []Step{{Redact: &RedactConfig{Patterns: map[string]string{"ticket": `TCK-\d+`}}}}, `see TCK-123`,
			`{` + head + `,"payload":"see *******"}`},
		{"redact named field only", []Step{{Parse: &ParseConfig{Format: "json"}}, {Redact: &RedactConfig{Detectors: []string{"email"}, Fields: []string{"payload.to"}}}}, `{"to":"a@b.io","cc":"c@d.io"}`,
			`{` + head + `,"payload":{"cc":"c@d.io","to":"******"}}`},
		{"timestamp rfc3339", []Step{{Parse: &ParseConfig{Format: "json"}}, {Timestamp: &TimestampConfig{Field: "payload.t"}}}, `{"t":"2026-01-02T03:04:05.5Z"}`,
			`{"_file":"/var/log/app.log","_line":1,"_ts":1767323045500,"payload":{"t":"2026-01-02T03:04:05.5Z"}}`},
		{"timestamp unix seconds", []Step{{Parse: &ParseConfig{Format: "json"}}, {Timestamp: &TimestampConfig{Field: "payload.t"}}}, `{"t":1767323045}`,
			`{"_file":"/var/log/app.log","_line":1,"_ts":1767323045000,"payload":{"t":1767323045}}`},
		{"timestamp unix ms as text", []Step{{Parse: &ParseConfig{Format: "json"}}, {Timestamp: &TimestampConfig{Field: "payload.t", Layout: "unix-ms"}}}, `{"t":"1767323045123"}`,
			`{"_file":"/var/log/app.log","_line":1,"_ts":1767323045123,"payload":{"t":"1767323045123"}}`},
		{"timestamp go layout", []Step{{Parse: &ParseConfig{Format: "json"}}, {Timestamp: &TimestampConfig{Field: "payload.t", Layout: "02/01/2006 15:04"}}}, `{"t":"02/01/2026 03:04"}`,
			`{"_file":"/var/log/app.log","_line":1,"_ts":1767323040000,"payload":{"t":"02/01/2026 03:04"}}`},
		{"timestamp fallback keep", []Step{{Timestamp: &TimestampConfig{Field: "payload.t"}}}, `x`,
			`{` + head + `,"payload":"x"}`},
		{"timestamp fallback now", []Step{{Timestamp: &TimestampConfig{Field: "t", Fallback: "now"}}}, `x`,
			`{"_file":"/var/log/app.log","_line":1,"_ts":1767323045000,"payload":"x"}`},
		{"timestamp fallback drop", []Step{{Timestamp: &TimestampConfig{Field: "t", Fallback: "drop"}}}, `x`, ``},
		{"sample one in one keeps", []Step{{Sample: &SampleConfig{OneIn: 1}}}, `x`, `{` + head + `,"payload":"x"}`},
		{"sample unless keeps", []Step{{Sample: &SampleConfig{OneIn: 1 << 30, Unless: `payload contains "ERROR"`}}}, `ERROR x`, `{` + head + `,"payload":"ERROR x"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustChain(t, tc.steps...)
			got := runOne(t, c, line(tc.payload, 1))
			if got == nil {
				if tc.want != "" {
					t.Fatalf("event dropped, want %s", tc.want)
				}
				return
			}
			if g := jsonOf(got); g != tc.want {
				t.Errorf("got  %s\nwant %s", g, tc.want)
			}
		})
	}
}

// hmacHex is the first 16 bytes of HMAC-SHA256(key, v) in hex, computed
// here independently of redact.
func hmacHex(key, v string) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(v))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func TestTimestampFallbackNowUsesTheChainClock(t *testing.T) {
	// t0 is 2026-01-02T03:04:05Z = 1767323045000 ms, which the
	// "timestamp fallback now" case above expects.
	if t0.UnixMilli() != 1767323045000 {
		t.Fatalf("t0 = %d", t0.UnixMilli())
	}
	_ = time.Second
}

func TestRedactCountsPerDetector(t *testing.T) {
	c := mustChain(t, Step{Redact: &RedactConfig{Detectors: []string{"email", "ipv4", "credit-card"}}})
	runOne(t, c, line("a@b.io c@d.io 10.0.0.1 4111111111111111 1234567890123", 1))
	st := c.Stats().Steps[0]
	got := map[string]uint64{}
	for _, x := range st.Extra {
		got[x.Name] = x.Value
	}
	want := map[string]uint64{"redacted_email": 2, "redacted_ipv4": 1, "redacted_credit-card": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

func TestLuhn(t *testing.T) {
	for _, tc := range []struct {
		n    string
		want bool
	}{
		{"4111111111111111", true}, {"4111 1111 1111 1111", true}, {"5500-0000-0000-0004", true},
		{"4111111111111112", false}, {"1234567890123", false}, {"0000", false},
	} {
		if got := luhnValid(tc.n); got != tc.want {
			t.Errorf("luhnValid(%q) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestInvalidSteps(t *testing.T) {
	cases := []struct {
		name  string
		step  Step
		key   string
		wants string
	}{
		{"empty", Step{}, "processors[0]", "empty processor"},
		{"two kinds", Step{Drop: "true", Keep: "true"}, "processors[0]", "one processor per entry"},
		{"format", Step{Parse: &ParseConfig{Format: "xml"}}, "processors[0].parse.format", `"xml"`},
		{"regex without groups", Step{Parse: &ParseConfig{Format: "regex", Pattern: `\d+`}}, "processors[0].parse.pattern", "no named group"},
		{"bad regex", Step{Parse: &ParseConfig{Format: "regex", Pattern: `(?P<a>`}}, "processors[0].parse.pattern", "not a regular expression"},
		{"csv no columns", Step{Parse: &ParseConfig{Format: "csv"}}, "processors[0].parse.columns", "column names"},
		{"on-error", Step{Parse: &ParseConfig{Format: "json", OnError: "ignore"}}, "processors[0].parse.on-error", "keep or drop"},
		{"syntax", Step{Drop: `payload.level ==`}, "processors[0].drop", "expression column 16"},
		{"type", Step{Keep: `1 + "a"`}, "processors[0].keep", "expression column 3"},
		{"not boolean", Step{Drop: `1 + 2`}, "processors[0].drop", "expected bool"},
		{"rename to a path", Step{Rename: map[string]string{"a": "b.c"}}, "processors[0].rename.a", "plain name"},
		{"empty path", Step{Set: map[string]string{"a..b": "x"}}, "processors[0].set.a..b", "empty part"},
		{"truncate too small", Step{Truncate: &TruncateConfig{MaxBytes: 2}}, "processors[0].truncate.max-bytes", "more than the marker"},
		{"unknown detector", Step{Redact: &RedactConfig{Detectors: []string{"ssn"}}}, "processors[0].redact.detectors[0]", `"ssn"`},
		{"hash without key", Step{Redact: &RedactConfig{Detectors: []string{"email"}, Action: "hash"}}, "processors[0].redact.hash-key-file", "key file"},
		{"hash key missing", Step{Redact: &RedactConfig{Detectors: []string{"email"}, Action: "hash", HashKeyFile: "/nonexistent/key"}}, "processors[0].redact.hash-key-file", "no such file"},
		{"no detector", Step{Redact: &RedactConfig{}}, "processors[0].redact.detectors", "no detector"},
		{"dedup window", Step{Dedup: &DedupConfig{Window: -time.Second}}, "processors[0].dedup.window-ms", "> 0"},
		{"dedup keys", Step{Dedup: &DedupConfig{MaxKeys: -1}}, "processors[0].dedup.max-keys", "1 to"},
		{"dedup key expr", Step{Dedup: &DedupConfig{Key: `payload.(`}}, "processors[0].dedup.key", "expression column"},
		{"sample zero", Step{Sample: &SampleConfig{}}, "processors[0].sample.one-in", ">= 1"},
		{"timestamp field", Step{Timestamp: &TimestampConfig{}}, "processors[0].timestamp.field", "empty field"},
		{"timestamp layout", Step{Timestamp: &TimestampConfig{Field: "t", Layout: "yyyy-mm-dd"}}, "processors[0].timestamp.layout", "Go layout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate([]Step{tc.step})
			if err == nil {
				t.Fatal("valid, want an error")
			}
			if !strings.Contains(err.Error(), tc.key+": ") || !strings.Contains(err.Error(), tc.wants) {
				t.Errorf("error %q, want key %s and %q", err, tc.key, tc.wants)
			}
		})
	}
}
