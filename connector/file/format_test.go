package file

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf16"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// TestEventExactBytes pins the event JSON byte for byte (field order and
// spelling of the Java formatter).
func TestEventExactBytes(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "hello \"world\"\tend\r\nsecond\n")
	h.open()
	evs, err := h.in.Poll(t.Context(), nil, 10)
	must(t, err)
	p := h.path("a.log")
	want := []string{
		fmt.Sprintf(`{"_index":0,"_file":%q,"_line":1,"_offset":19,"_ts":1700000000000,"payload":"hello \"world\"\tend"}`, p),
		fmt.Sprintf(`{"_index":0,"_file":%q,"_line":2,"_offset":26,"_ts":1700000000000,"payload":"second"}`, p),
	}
	if len(evs) != 2 {
		t.Fatalf("got %d events", len(evs))
	}
	for i, w := range want {
		if string(evs[i].Payload) != w {
			t.Errorf("event %d:\n got %s\nwant %s", i, evs[i].Payload, w)
		}
	}
	id := mustStat(t, p)
	st := string(evs[1].Pos.State)
	prefix := fmt.Sprintf(`{"v":1,"path":%q,"dev":%d,"ino":%d,"fp_len":26,"fp":"`, p, id.dev, id.ino)
	if !strings.HasPrefix(st, prefix) || !strings.HasSuffix(st, `","offset":26,"line":2,"size":26}`) {
		t.Fatalf("state %s", st)
	}
	// The first line's position is the second's to carry: same file,
	// same Poll (input.Event).
	if evs[0].Pos.Key != "" || evs[1].Pos.Key == "" {
		t.Fatalf("position keys %q, %q: want only the last line of the run to carry one", evs[0].Pos.Key, evs[1].Pos.Key)
	}
}

// TestNDJSON: output-format json puts the parsed value in payload when
// the line is JSON (compacted onto one line), else the text.
func TestNDJSON(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.OutputFormat.Type = "json" })
	lines := []string{
		`{"level":"info", "msg":"a b"}`,
		`[1, 2,3]`,
		`42`,
		`"just a string"`,
		`{"broken":`,
		``,
		`not json at all`,
		"{\"bad_utf8\":\"\xff\"}",
		`{"a":1} trailing`,
	}
	h.write("a.log", strings.Join(lines, "\n")+"\n")
	h.open()
	evs, err := h.in.Poll(t.Context(), nil, 20)
	must(t, err)
	want := []string{
		`{"level":"info","msg":"a b"}`,
		`[1,2,3]`,
		`42`,
		`"just a string"`,
		`"{\"broken\":"`,
		`""`,
		`"not json at all"`,
		`"{\"bad_utf8\":\"\ufffd\"}"`,
		`"{\"a\":1} trailing"`,
	}
	if len(evs) != len(want) {
		t.Fatalf("got %d events", len(evs))
	}
	for i, w := range want {
		var ev struct{ Payload json.RawMessage }
		if err := json.Unmarshal(evs[i].Payload, &ev); err != nil {
			t.Fatalf("event %d invalid JSON %s: %v", i, evs[i].Payload, err)
		}
		if string(ev.Payload) != w {
			t.Errorf("line %d: payload %s, want %s", i, ev.Payload, w)
		}
	}
}

func TestEncodings(t *testing.T) {
	gbk, err := simplifiedchinese.GBK.NewEncoder().String("中文日志\n第二行\n")
	must(t, err)
	u16 := func(s string, be, bom bool) string {
		var b []byte
		if bom {
			if be {
				b = append(b, 0xFE, 0xFF)
			} else {
				b = append(b, 0xFF, 0xFE)
			}
		}
		for _, u := range utf16.Encode([]rune(s)) {
			if be {
				b = append(b, byte(u>>8), byte(u))
			} else {
				b = append(b, byte(u), byte(u>>8))
			}
		}
		return string(b)
	}
	cases := []struct {
		enc, data string
		want      []string
		invalid   int64
	}{
		{"GBK", gbk, []string{"中文日志", "第二行"}, 0},
		{"gbk", "ok\xff\n", []string{"ok\uFFFD"}, 1},
		{"ISO-8859-1", "caf\xe9\r\n\xa9 2024\n", []string{"café", "© 2024"}, 0},
		{"latin1", "na\xefve\n", []string{"naïve"}, 0},
		{"UTF-16LE", u16("héllo\r\nwörld\n", false, true), []string{"héllo", "wörld"}, 0},
		{"UTF-16BE", u16("a\u0a0ab\n", true, false), []string{"a\u0a0ab"}, 0},
		{"UTF-16", u16("bom le\nline 2\n", false, true), []string{"bom le", "line 2"}, 0},
		{"UTF-16", u16("bom be\n", true, true), []string{"bom be"}, 0},
		{"UTF-16", u16("no bom\n", true, false), []string{"no bom"}, 0},
		{"UTF-8", "\xef\xbb\xbfwith bom\nbad \xc3\x28 seq\n", []string{"with bom", "bad \uFFFD( seq"}, 1},
	}
	for _, c := range cases {
		t.Run(c.enc, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) { cfg.Encoding = c.enc })
			must(t, os.WriteFile(h.path("a.log"), []byte(c.data), 0o644))
			h.open()
			got := h.pollAll()
			wantTexts(t, got, c.want...)
			if got[len(got)-1].Offset != int64(len(c.data)) {
				t.Fatalf("offset %d, want raw byte offset %d", got[len(got)-1].Offset, len(c.data))
			}
			if s := h.in.Stats(); s.InvalidSequences != c.invalid {
				t.Fatalf("invalid = %d, want %d", s.InvalidSequences, c.invalid)
			}
		})
	}
}

func TestEncodingLookup(t *testing.T) {
	for _, ok := range []string{"", "UTF-8", "utf8", "ISO-8859-1", "latin1", "UTF-16LE", "UTF-16BE", "UTF-16", "GBK", "GB18030", "Shift_JIS", "windows-1252"} {
		if _, err := lookupEncoding(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"NOT_A_REAL_CHARSET_XYZ", "UTF-32", "IBM037"} {
		if _, err := lookupEncoding(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if n, _ := lookupEncoding("gbk"); n != "GBK" {
		t.Errorf("GBK canonical name %q", n)
	}
}

// TestLongLines: lines over max-line-bytes are cut and counted, memory
// stays bounded, and the following line is intact.
func TestLongLines(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxLineBytes = 100 })
	long := strings.Repeat("é", 2000) // 4000 bytes, cut inside a rune
	h.write("a.log", long+"\nshort\n")
	h.open()
	got := h.pollAll()
	if len(got) != 2 || got[1].text() != "short" || got[0].Offset != 4001 {
		t.Fatalf("got %v", texts(got))
	}
	if txt := got[0].text(); txt != strings.Repeat("é", 50) {
		t.Fatalf("truncated text %q", txt)
	}
	if s := h.in.Stats(); s.TruncatedLines != 1 || s.InvalidSequences != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestBinaryFile: arbitrary bytes never break the event JSON.
func TestBinaryFile(t *testing.T) {
	h := newHarness(t, nil)
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	must(t, os.WriteFile(h.path("a.log"), append(data, '\n'), 0o644))
	h.open()
	if got := h.pollAll(); len(got) == 0 {
		t.Fatal("nothing read")
	}
}

// FuzzEventPayload: whatever the bytes and charset, the payload written
// for a line is valid JSON on one line.
func FuzzEventPayload(f *testing.F) {
	f.Add([]byte("plain"), uint8(0), false)
	f.Add([]byte("{\"a\":\n1}"), uint8(0), true)
	f.Add([]byte("\xff\xfe\x00\xd8"), uint8(3), false)
	f.Add([]byte("\x81\x30\xa1"), uint8(5), true)
	encs := []string{"UTF-8", "ISO-8859-1", "UTF-16LE", "UTF-16BE", "UTF-16", "GBK", "Shift_JIS"}
	f.Fuzz(func(t *testing.T, raw []byte, enc uint8, jsonOut bool) {
		c, err := resolveEncoding(encs[int(enc)%len(encs)])
		if err != nil {
			t.Fatal(err)
		}
		fm := formatter{codec: c, dec: newDecoder(c), jsonOut: jsonOut}
		out := appendObjectHead(nil, 0, []byte(`"/x"`), 1, 2, 3)
		out = fm.appendPayload(out, raw, nil, enc%2 == 0)
		out = append(out, '}')
		if !json.Valid(out) || strings.ContainsAny(string(out), "\n\r") {
			t.Fatalf("invalid event %q for %q", out, raw)
		}
	})
}
