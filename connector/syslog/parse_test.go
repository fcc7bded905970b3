package syslog

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/edge-agent/edge-agent/connector/syslog/message"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fields is what a test compares of a Message: strings, "" for absent.
type fields struct {
	format                         string
	fac, sev                       int
	ts, host, app, pid, msgid, msg string
	sd                             string // elements as ID{k=v,...} joined by space
	time                           string // RFC 3339 of Time, "" when zero
}

func fieldsOf(m message.Message) fields {
	f := fields{format: m.Format, fac: m.Facility, sev: m.Severity, ts: string(m.Timestamp), host: string(m.Hostname),
		app: string(m.AppName), pid: string(m.ProcID), msgid: string(m.MsgID), msg: string(m.Msg)}
	var sd []string
	for _, el := range m.SD {
		var ps []string
		for _, p := range el.Params {
			ps = append(ps, string(p.Name)+"="+string(p.Value))
		}
		sd = append(sd, string(el.ID)+"{"+strings.Join(ps, ",")+"}")
	}
	f.sd = strings.Join(sd, " ")
	if !m.Time.IsZero() {
		f.time = m.Time.UTC().Format(time.RFC3339Nano)
	}
	return f
}

func TestParseRFC5424(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     fields
		err      error
	}{
		{name: "RFC example 1", in: "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - BOM'su root' failed for lonvick on /dev/pts/8",
			want: fields{format: "rfc5424", fac: 4, sev: 2, ts: "2003-10-11T22:14:15.003Z", time: "2003-10-11T22:14:15.003Z",
				host: "mymachine.example.com", app: "su", msgid: "ID47", msg: "BOM'su root' failed for lonvick on /dev/pts/8"}},
		{name: "BOM stripped", in: "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - \xEF\xBB\xBF%% It's time",
			want: fields{format: "rfc5424", fac: 20, sev: 5, ts: "2003-08-24T05:14:15.000003-07:00", time: "2003-08-24T12:14:15.000003Z",
				host: "192.0.2.1", app: "myproc", pid: "8710", msg: "%% It's time"}},
		{name: "structured data, escapes, no msg",
			in: `<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Appl\"ic\]a\\tion" eventID="1011"][examplePriority@32473 class="high"]`,
			want: fields{format: "rfc5424", fac: 20, sev: 5, ts: "2003-10-11T22:14:15.003Z", time: "2003-10-11T22:14:15.003Z",
				host: "mymachine.example.com", app: "evntslog", msgid: "ID47",
				sd: `exampleSDID@32473{iut=3,eventSource=Appl"ic]a\tion,eventID=1011} examplePriority@32473{class=high}`}},
		{name: "other backslashes kept", in: `<13>1 - - - - - [a b="x\ny\\"] m`,
			want: fields{format: "rfc5424", fac: 1, sev: 5, sd: `a{b=x\ny\}`, msg: "m"}},
		{name: "all nil", in: "<0>1 - - - - - -", want: fields{format: "rfc5424"}},
		{name: "empty SD element", in: "<191>1 - h a p m [x] text", want: fields{format: "rfc5424", fac: 23, sev: 7, host: "h", app: "a", pid: "p", msgid: "m", sd: "x{}", msg: "text"}},
		{name: "NUL in msg kept", in: "<13>1 - h a - - - a\x00b", want: fields{format: "rfc5424", fac: 1, sev: 5, host: "h", app: "a", msg: "a\x00b"}},
		{name: "invalid UTF-8 in msg kept", in: "<13>1 - h a - - - \xff\xfe", want: fields{format: "rfc5424", fac: 1, sev: 5, host: "h", app: "a", msg: "\xff\xfe"}},
		{name: "version 2 digits", in: "<13>12 - - - - - -", want: fields{format: "rfc5424", fac: 1, sev: 5}},

		{name: "no PRI", in: "1 - - - - - -", err: message.ErrNoPRI},
		{name: "PRI too big", in: "<192>1 - - - - - -", err: message.ErrBadPRI},
		{name: "PRI leading zero", in: "<013>1 - - - - - -", err: message.ErrBadPRI},
		{name: "PRI not closed", in: "<13", err: message.ErrBadPRI},
		{name: "no version", in: "<13>Oct 11 22:14:15 host app: x", err: message.ErrNotRFC5424},
		{name: "truncated header", in: "<13>1 2003-10-11T22:14:15Z host", err: message.ErrHeader},
		{name: "truncated SD", in: `<13>1 - h a - - [id k="v`, err: message.ErrSD},
		{name: "SD not closed", in: `<13>1 - h a - - [id k="v"`, err: message.ErrSD},
		{name: "SD missing", in: `<13>1 - h a - - `, err: message.ErrSD},
		{name: "SD garbage", in: `<13>1 - h a - - hello`, err: message.ErrSD},
		{name: "bad timestamp", in: "<13>1 yesterday h a - - -", err: message.ErrHeader},
		{name: "NUL in hostname", in: "<13>1 - h\x00 a - - -", err: message.ErrHeader},
		{name: "app name too long", in: "<13>1 - h " + strings.Repeat("a", 49) + " - - -", err: message.ErrHeader},
		{name: "no space after SD", in: "<13>1 - h a - - -x", err: message.ErrSD},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := message.ParseRFC5424([]byte(tc.in))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fieldsOf(m); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseRFC3164(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     fields
		err      error
	}{
		{name: "RFC example", in: "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
			want: fields{format: "rfc3164", fac: 4, sev: 2, ts: "Oct 11 22:14:15", host: "mymachine", app: "su", msg: "'su root' failed for lonvick on /dev/pts/8"}},
		{name: "pid, space-padded day", in: "<13>Dec  2 00:41:04 gw sshd[812]: Accepted publickey",
			want: fields{format: "rfc3164", fac: 1, sev: 5, ts: "Dec  2 00:41:04", host: "gw", app: "sshd", pid: "812", msg: "Accepted publickey"}},
		{name: "no hostname (local form)", in: "<13>Dec  2 00:41:04 sshd[812]: hi",
			want: fields{format: "rfc3164", fac: 1, sev: 5, ts: "Dec  2 00:41:04", app: "sshd", pid: "812", msg: "hi"}},
		{name: "no tag", in: "<13>Dec  2 00:41:04 gw just words here",
			want: fields{format: "rfc3164", fac: 1, sev: 5, ts: "Dec  2 00:41:04", host: "gw", msg: "just words here"}},
		{name: "rfc3339 timestamp (rsyslog)", in: "<30>2026-12-02T00:41:04.123456+00:00 gw app: x",
			want: fields{format: "rfc3164", fac: 3, sev: 6, ts: "2026-12-02T00:41:04.123456+00:00", time: "2026-12-02T00:41:04.123456Z", host: "gw", app: "app", msg: "x"}},
		{name: "no timestamp: all msg", in: "<13>hello world", want: fields{format: "rfc3164", fac: 1, sev: 5, msg: "hello world"}},
		{name: "no PRI: user.notice", in: "plain text", want: fields{format: "rfc3164", fac: 1, sev: 5, msg: "plain text"}},
		{name: "empty after PRI", in: "<13>", want: fields{format: "rfc3164", fac: 1, sev: 5}},
		{name: "NUL and invalid UTF-8 kept", in: "<13>Oct 11 22:14:15 h a: \x00\xff", want: fields{format: "rfc3164", fac: 1, sev: 5, ts: "Oct 11 22:14:15", host: "h", app: "a", msg: "\x00\xff"}},
		{name: "truncated in timestamp", in: "<13>Oct 11 22:1", want: fields{format: "rfc3164", fac: 1, sev: 5, msg: "Oct 11 22:1"}},
		{name: "pid not closed", in: "<13>Oct 11 22:14:15 h app[12 x", want: fields{format: "rfc3164", fac: 1, sev: 5, ts: "Oct 11 22:14:15", host: "h", msg: "app[12 x"}},
		{name: "bad PRI", in: "<999>Oct 11 22:14:15 h a: x", err: message.ErrBadPRI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := message.ParseRFC3164([]byte(tc.in))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fieldsOf(m); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseAuto(t *testing.T) {
	for in, want := range map[string]string{
		"<13>1 - - - - - - x":        message.FormatRFC5424,
		"<13>Oct 11 22:14:15 h a: x": message.FormatRFC3164,
		"<13>10 apples":              message.FormatRFC5424,
		"hello":                      message.FormatRFC3164,
	} {
		m, _ := message.Parse([]byte(in), message.FormatAuto)
		if m.Format != want {
			t.Errorf("%q: format %q, want %q", in, m.Format, want)
		}
	}
	if _, err := message.Parse([]byte("<13>Oct 11 22:14:15 h a: x"), message.FormatRFC5424); !errors.Is(err, message.ErrNotRFC5424) {
		t.Errorf("forced rfc5424 on a BSD message: %v", err)
	}
	if m, err := message.Parse([]byte("<13>1 - - - - - - x"), message.FormatRFC3164); err != nil || m.Format != message.FormatRFC3164 || m.Msg == nil {
		t.Errorf("forced rfc3164 on an RFC 5424 message: %+v %v", fieldsOf(m), err)
	}
}

// The event JSON is valid, one line, holds the parsed fields, and turns
// invalid UTF-8 into U+FFFD, counted.
func TestEventJSON(t *testing.T) {
	raw := []byte("<165>1 2003-10-11T22:14:15.003Z host app 12 ID [a x=\"1\" x=\"2\"][b y=\"\\\"\"][a z=\"3\"] hi\x00\xff\nthere")
	m, err := message.Parse(raw, message.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []bool{true, false} {
		e := encoder{raw: raw}
		out := e.appendEvent(nil, []byte(rawMsg(raw)), []byte(`"192.0.2.1:5"`), time.UnixMilli(1), &m, nil)
		if bytes.ContainsAny(out, "\n\r") || !utf8.Valid(out) {
			t.Fatalf("event is not one valid UTF-8 line: %q", out)
		}
		var ev map[string]any
		if err := json.Unmarshal(out, &ev); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		want := map[string]any{"_ts": float64(1065910455003), "_peer": "192.0.2.1:5", "format": "rfc5424",
			"facility": float64(20), "facility_name": "local4", "severity": float64(5), "severity_name": "notice",
			"timestamp": "2003-10-11T22:14:15.003Z", "hostname": "host", "app_name": "app", "procid": "12", "msgid": "ID",
			"msg": "hi\x00\uFFFD\nthere"}
		for k, v := range want {
			if ev[k] != v {
				t.Errorf("raw=%v: %s = %#v, want %#v", raw, k, ev[k], v)
			}
		}
		sd, _ := json.Marshal(ev["structured_data"])
		if string(sd) != `{"a":{"x":["1","2"],"z":"3"},"b":{"y":"\""}}` {
			t.Errorf("structured_data %s", sd)
		}
		if _, ok := ev["payload"]; ok != raw {
			t.Errorf("payload present = %v with raw = %v", ok, raw)
		}
		if e.invalid == 0 {
			t.Errorf("invalid UTF-8 not counted")
		}
	}
	// A message that does not parse keeps its text, and says why.
	e := encoder{raw: false}
	_, perr := message.Parse([]byte("<13>1 broken"), message.FormatAuto)
	out := e.appendEvent(nil, []byte("<13>1 broken"), []byte(`"p"`), time.UnixMilli(7), &message.Message{}, perr)
	var ev map[string]any
	if err := json.Unmarshal(out, &ev); err != nil || ev["msg"] != "<13>1 broken" || ev["parse_error"] == nil || ev["_ts"] != float64(7) {
		t.Fatalf("unparsed event %s (%v)", out, err)
	}
}

func rawMsg(bool) string { return "<165>1 raw" }
