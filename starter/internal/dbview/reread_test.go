package dbview

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseRereadArgs(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       RereadArgs
		offset     int64
		err        string
	}{
		{name: "path only: offset 0", args: `{"path":"/var/log/app.log"}`, want: RereadArgs{Path: "/var/log/app.log"}},
		{name: "every arg", args: `{"path":"/l/a.log","offset":120,"input":"app"}`, want: RereadArgs{Path: "/l/a.log", Input: "app"}, offset: 120},
		{name: "no args", args: ``, err: `needs args {"path"`},
		{name: "null", args: `null`, err: `needs args`},
		{name: "no path", args: `{"offset":3}`, err: `no "path"`},
		{name: "negative offset", args: `{"path":"/a","offset":-1}`, err: `"offset" -1 is negative`},
		{name: "an unknown key", args: `{"path":"/a","ofset":1}`, err: `unknown field "ofset"`},
		{name: "offset not a number", args: `{"path":"/a","offset":"10"}`, err: `malformed args`},
		{name: "two values", args: `{"path":"/a"} {"path":"/b"}`, err: `more than one JSON value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRereadArgs(json.RawMessage(tc.args))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseRereadArgs(%s) = %+v, %v; want error %q", tc.args, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var off int64
			if got.Offset != nil {
				off = *got.Offset
			}
			if got.Path != tc.want.Path || got.Input != tc.want.Input || off != tc.offset {
				t.Fatalf("ParseRereadArgs(%s) = %+v (offset %d)", tc.args, got, off)
			}
		})
	}
}

// FuzzParseRereadArgs: any args are either refused with an error or give
// a path and an offset of 0 or more.
func FuzzParseRereadArgs(f *testing.F) {
	for _, s := range []string{`{"path":"/a.log"}`, `{"path":"/a","offset":5,"input":"x"}`, `{"offset":-3}`, `[]`, `{"path":1}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseRereadArgs(b)
		if err != nil {
			return
		}
		if strings.TrimSpace(a.Path) == "" || (a.Offset != nil && *a.Offset < 0) {
			t.Fatalf("accepted %q as %+v", b, a)
		}
	})
}
