package lines

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     []string
	}{
		{"lines", "a\nb\r\nc", 10, []string{"a", "b", "c"}},
		{"empty lines", "\n\nx\n", 10, []string{"", "", "x"}},
		{"cut", "0123456789abc\nok\n", 4, []string{"0123+", "ok"}},
		{"cut exactly", "0123\n", 4, []string{"0123"}},
		{"cut without newline", "0123456789", 4, []string{"0123+"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct {
				name string
				wrap func(s string) *strings.Reader
			}{{"whole", strings.NewReader}} {
				var got []string
				err := Read(iotest.OneByteReader(r.wrap(tc.in)), tc.max, func(l []byte, cut bool) error {
					s := string(l)
					if cut {
						s += "+"
					}
					got = append(got, s)
					return nil
				})
				if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("%s: %q %v, want %q", r.name, got, err, tc.want)
				}
			}
		})
	}
}

// A line far over the bound is cut without holding it: memory stays at
// the bound.
func TestReadLongLineBounded(t *testing.T) {
	in := strings.Repeat("x", 10<<20) + "\nnext\n"
	var got []int
	if err := Read(strings.NewReader(in), 1<<10, func(l []byte, _ bool) error {
		if cap(l) > 130<<10 {
			t.Fatalf("line buffer grew to %d", cap(l))
		}
		got = append(got, len(l))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1024 4]" {
		t.Fatalf("lines %v", got)
	}
}

func TestEncoder(t *testing.T) {
	recv := time.UnixMilli(5)
	for _, tc := range []struct {
		json       bool
		line, want string
	}{
		{false, "hello \"x\"", `{"_ts":5,"stream":"stdout","message":"hello \"x\""}`},
		{true, ` {"a": 1} `, `{"a":1}`},
		{true, `[1]`, `{"_ts":5,"stream":"stdout","parse_error":"not a JSON object","message":"[1]"}`},
		{true, `{bad`, `{"_ts":5,"stream":"stdout","parse_error":"not JSON","message":"{bad"}`},
		{false, "a\xffb", `{"_ts":5,"stream":"stdout","message":"a\ufffdb"}`},
	} {
		e := Encoder{JSON: tc.json, Extra: []byte(`,"stream":"stdout"`)}
		if got := string(e.Append(nil, []byte(tc.line), recv)); got != tc.want {
			t.Errorf("%q: got %s, want %s", tc.line, got, tc.want)
		}
	}
}

// FuzzLines: every line read becomes one line of valid JSON; the lines
// read joined with LF give back the input (less CRs before LF and cut
// tails).
func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nb\r\n{\"x\":1}\n"), true)
	f.Add([]byte("\xff\x00\n"), false)
	f.Fuzz(func(t *testing.T, in []byte, asJSON bool) {
		e := Encoder{JSON: asJSON}
		n := 0
		err := Read(bytes.NewReader(in), 64, func(l []byte, _ bool) error {
			n++
			ev := e.Append(nil, l, time.UnixMilli(1))
			if bytes.ContainsAny(ev, "\r\n") || !json.Valid(ev) {
				t.Fatalf("event %q of line %q", ev, l)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := bytes.Count(in, []byte{'\n'}); n < want || n > want+1 {
			t.Fatalf("%d lines from %d LFs", n, want)
		}
	})
}
