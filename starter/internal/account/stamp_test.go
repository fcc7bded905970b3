package account

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestStamp(t *testing.T) {
	tag := InputTag(`a"pp`)
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`{"_ts":5,"payload":"x"}`, `{"_ts":5,"payload":"x","_input":"a\"pp","_seq":7}`, true},
		{"{\"a\":1}\n ", `{"a":1,"_input":"a\"pp","_seq":7}`, true},
		{`{}`, `{"_input":"a\"pp","_seq":7}`, true},
		{`{ }`, `{ "_input":"a\"pp","_seq":7}`, true},
		{`"text"`, ``, false},
		{`[1]`, ``, false},
		{`{`, ``, false},
		{``, ``, false},
	} {
		got, ok := Stamp([]byte("pre"), []byte(tc.in), tag, 7)
		if ok != tc.ok || (ok && string(got) != "pre"+tc.want) || (!ok && string(got) != "pre") {
			t.Errorf("Stamp(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(got[3:], &m); err != nil {
			t.Errorf("Stamp(%q) = %q: not JSON: %v", tc.in, got, err)
		}
		if n, ok := Seq(got); !ok || n != 7 {
			t.Errorf("Seq(%q) = %d, %v", got, n, ok)
		}
	}
}

func TestFieldsRead(t *testing.T) {
	for _, tc := range []struct {
		in   string
		seq  uint64
		ok   bool
		ts   int64
		file string
	}{
		{`{"_index":0,"_file":"/a/b \"c\".log","_line":3,"_ts":1700000000000,"payload":"x","_input":"i","_seq":12}`, 12, true, 1700000000000, `/a/b "c".log`},
		{`{"_ts":-5,"payload":"\"_seq\":3}"}`, 0, false, -5, ""},
		{`{"payload":"x","_seq":}`, 0, false, 0, ""},
		{`{"_ts":,"_file":"unterminated`, 0, false, 0, ""},
	} {
		seq, ok := Seq([]byte(tc.in))
		if seq != tc.seq || ok != tc.ok || TS([]byte(tc.in)) != tc.ts || File([]byte(tc.in)) != tc.file {
			t.Errorf("%s: seq %d %v, ts %d, file %q; want %d %v, %d, %q", tc.in, seq, ok, TS([]byte(tc.in)), File([]byte(tc.in)), tc.seq, tc.ok, tc.ts, tc.file)
		}
	}
}

func FuzzStamp(f *testing.F) {
	f.Add([]byte(`{"payload":"x"}`), "app", uint64(1))
	f.Add([]byte(`{}`), "", uint64(1<<63))
	f.Add([]byte(`not json`), "x", uint64(2))
	f.Fuzz(func(t *testing.T, payload []byte, input string, seq uint64) {
		if seq == 0 {
			return
		}
		out, ok := Stamp(nil, payload, InputTag(input), seq)
		if !ok {
			return
		}
		if got, ok := Seq(out); !ok || got != seq {
			t.Fatalf("Seq(Stamp(%q)) = %d, %v; want %d", payload, got, ok, seq)
		}
		if json.Valid(payload) {
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatalf("Stamp(%q) = %q: %v", payload, out, err)
			}
			if utf8.ValidString(input) && m[FieldInput] != input {
				t.Fatalf("Stamp(%q) input %v, want %q", payload, m[FieldInput], input)
			}
		}
		_ = TS(payload)
		_ = File(payload)
	})
}
