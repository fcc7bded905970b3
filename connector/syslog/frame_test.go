package syslog

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/edge-agent/edge-agent/connector/syslog/message"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"
)

type frameOut struct {
	msgs []string
	cut  []bool
	err  error
}

func readFrames(r io.Reader, maxMsg int) frameOut {
	var out frameOut
	f := newFramer(r, maxMsg)
	for range 1 << 16 {
		m, cut, err := f.Next()
		if err != nil {
			out.err = err
			return out
		}
		out.msgs = append(out.msgs, string(m))
		out.cut = append(out.cut, cut)
	}
	out.err = errors.New("too many frames")
	return out
}

func TestFramer(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // 1 MiB
	for _, tc := range []struct {
		name, in string
		max      int
		msgs     []string
		cut      []bool
		err      error
	}{
		{name: "LF", in: "<13>a\n<13>b\r\n\n<13>c\n", max: 100, msgs: []string{"<13>a", "<13>b", "", "<13>c"}, err: io.EOF},
		{name: "LF last frame without LF", in: "<13>a\n<13>b", max: 100, msgs: []string{"<13>a", "<13>b"}, err: io.EOF},
		{name: "octet counting", in: "5 <13>a6 <13>bc10 <13>x\ny\nz\n", max: 100, msgs: []string{"<13>a", "<13>bc", "<13>x\ny\nz\n"}, err: io.EOF},
		{name: "octet count exactly the limit", in: "10 0123456789", max: 10, msgs: []string{"0123456789"}, err: io.EOF},
		{name: "octet count over the limit", in: "11 01234567890", max: 10, err: ErrFrameTooLarge},
		{name: "octet count huge", in: "99999999999999999999999 x", max: 1 << 20, err: ErrFrameTooLarge},
		{name: "octet count truncated frame", in: "20 <13>short", max: 100, err: ErrTruncatedFrame},
		{name: "octet count truncated in count", in: "5 <13>a12", max: 100, msgs: []string{"<13>a"}, err: ErrTruncatedFrame},
		{name: "octet count then garbage", in: "5 <13>ax <13>b", max: 100, msgs: []string{"<13>a"}, err: ErrBadOctetCount},
		{name: "octet count zero", in: "5 <13>a0 ", max: 100, msgs: []string{"<13>a"}, err: ErrBadOctetCount},
		{name: "NUL bytes", in: "<13>a\x00b\n\x00\n", max: 100, msgs: []string{"<13>a\x00b", "\x00"}, err: io.EOF},
		{name: "LF line cut at the limit", in: "<13>0123456789\n<13>ok\n", max: 8, msgs: []string{"<13>0123", "<13>ok"}, cut: []bool{true, false}, err: io.EOF},
		{name: "LF 1 MiB line over a 64 KiB limit", in: "<13>" + big + "\n<13>next\n", max: 64 << 10,
			msgs: []string{"<13>" + big[:64<<10-4], "<13>next"}, cut: []bool{true, false}, err: io.EOF},
		{name: "octet 1 MiB within the limit", in: strconv.Itoa(len(big)) + " " + big, max: 1 << 20, msgs: []string{big}, err: io.EOF},
		{name: "empty stream", in: "", max: 100, err: io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got := readFrames(r, tc.max)
				if !errors.Is(got.err, tc.err) {
					t.Fatalf("error %v, want %v", got.err, tc.err)
				}
				if strings.Join(got.msgs, "|") != strings.Join(tc.msgs, "|") || len(got.msgs) != len(tc.msgs) {
					t.Fatalf("frames %.80q, want %.80q", got.msgs, tc.msgs)
				}
				for i, c := range tc.cut {
					if got.cut[i] != c {
						t.Fatalf("frame %d cut = %v, want %v", i, got.cut[i], c)
					}
				}
			}
		})
	}
}

// FuzzFramer: any stream yields frames no longer than the limit and ends
// in an error, never a panic or an endless loop; octet-counted frames
// round-trip.
func FuzzFramer(f *testing.F) {
	for _, s := range []string{"<13>a\n<13>b", "5 <13>a6 <13>bc", "11 01234567890", "0 ", "\n\n\n", "3 ab", "1\n", "<13>\x00\xff\r\n"} {
		f.Add([]byte(s), 8)
	}
	f.Fuzz(func(t *testing.T, in []byte, maxMsg int) {
		maxMsg = 1 + abs(maxMsg)%512
		got := readFrames(bytes.NewReader(in), maxMsg)
		if got.err == nil {
			t.Fatal("no end")
		}
		checkFrameErrorShape(t, in, got.err)
		for _, m := range got.msgs {
			if len(m) > maxMsg {
				t.Fatalf("frame of %d bytes over the limit %d", len(m), maxMsg)
			}
		}
		// Any frames written with octet counting come back as they were.
		var enc []byte
		var want []string
		for _, m := range bytes.Split(in, []byte{'|'}) {
			if len(m) == 0 || len(m) > maxMsg {
				continue
			}
			enc = append(strconv.AppendInt(enc, int64(len(m)), 10), ' ')
			enc = append(enc, m...)
			want = append(want, string(m))
		}
		back := readFrames(bytes.NewReader(enc), maxMsg)
		if !errors.Is(back.err, io.EOF) || strings.Join(back.msgs, "\x01") != strings.Join(want, "\x01") {
			t.Fatalf("octet round trip: %q (%v), want %q", back.msgs, back.err, want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}

// FuzzParseRFC5424: no panic; a message that parses has a PRI in range,
// header fields within their limits, and becomes valid one-line JSON.
func FuzzParseRFC5424(f *testing.F) {
	for _, s := range []string{
		"<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - 'su root' failed",
		`<165>1 2003-10-11T22:14:15.003Z h evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="A\"p\]p\\"][b c="d"] msg`,
		"<0>1 - - - - - -", `<13>1 - - - - - [a b="`, "<13>1 - h a - - - \xff\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := message.ParseRFC5424(in)
		checkErrorShape(t, in, err)
		checkParsed(t, in, m, err)
		// RFC 5424 section 6: HOSTNAME 255, APP-NAME 48, PROCID 128, MSGID 32.
		if err == nil && (len(m.Hostname) > 255 || len(m.AppName) > 48 || len(m.ProcID) > 128 || len(m.MsgID) > 32) {
			t.Fatalf("header field over its limit: %+v", fieldsOf(m))
		}
	})
}

// FuzzParseRFC3164: no panic; the result becomes valid one-line JSON and
// MSG is a suffix of the input (nothing invented).
func FuzzParseRFC3164(f *testing.F) {
	for _, s := range []string{
		"<34>Oct 11 22:14:15 mymachine su: 'su root' failed", "<13>Dec  2 00:41:04 sshd[812]: hi",
		"<30>2026-12-02T00:41:04.123456+00:00 gw app: x", "plain", "<13>", "<1>Oct 11 22:14:15 h a[: x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := message.ParseRFC3164(in)
		checkErrorShape(t, in, err)
		checkParsed(t, in, m, err)
		if err == nil && !bytes.HasSuffix(in, m.Msg) {
			t.Fatalf("MSG %q is not the end of %q", m.Msg, in)
		}
	})
}

func checkParsed(t *testing.T, in []byte, m message.Message, err error) {
	t.Helper()
	if err != nil {
		return
	}
	if m.Facility < 0 || m.Facility > 23 || m.Severity < 0 || m.Severity > 7 {
		t.Fatalf("PRI out of range: %+v", fieldsOf(m))
	}
	for _, raw := range []bool{true, false} {
		e := encoder{raw: raw}
		out := e.appendEvent(nil, in, []byte(`"p"`), time.Unix(0, 0), &m, nil)
		if !json.Valid(out) || !utf8.Valid(out) || bytes.ContainsAny(out, "\n\r") {
			t.Fatalf("bad event JSON %q from %q", out, in)
		}
	}
}
