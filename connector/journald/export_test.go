package journald

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/journald/journaltest"
)

func parseAll(t testing.TB, b []byte, limit int) ([][]field, error) {
	p := newParser(bytes.NewReader(b), limit)
	var out [][]field
	var e rawEntry
	for {
		err := p.next(&e)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		fs := make([]field, len(e.Fields))
		for i, f := range e.Fields {
			fs[i] = field{Name: bytes.Clone(f.Name), Value: bytes.Clone(f.Value), Truncated: f.Truncated}
		}
		out = append(out, fs)
	}
}

func TestParserForms(t *testing.T) {
	bin := "A\n\x03\x00\x00\x00\x00\x00\x00\x00x\ny\n"
	for _, tc := range []struct {
		name, in string
		limit    int
		want     [][]string // name=value per entry
		trunc    bool
		err      string
	}{
		{"line form", "A=1\nB=two words\n\n", 64, [][]string{{"A=1", "B=two words"}}, false, ""},
		{"binary form", bin + "\n", 64, [][]string{{"A=x\ny"}}, false, ""},
		{"two entries and blank lines", "\nA=1\n\n\nB=\n\n", 64, [][]string{{"A=1"}, {"B="}}, false, ""},
		{"line value cut", "A=0123456789\n\n", 4, [][]string{{"A=0123"}}, true, ""},
		{"binary value cut", "A\n\x0a\x00\x00\x00\x00\x00\x00\x000123456789\n\n", 4, [][]string{{"A=0123"}}, true, ""},
		{"end inside an entry", "A=1\n", 64, nil, false, "unexpected EOF"},
		{"end inside a binary value", "A\n\x09\x00\x00\x00\x00\x00\x00\x00xy", 64, nil, false, "unexpected EOF"},
		{"lower-case name", "a=1\n\n", 64, nil, false, "field name"},
		{"empty name", "=1\n\n", 64, nil, false, "empty field name"},
		{"long name", strings.Repeat("A", 65) + "=1\n\n", 64, nil, false, "longer than 64"},
		{"binary without newline", "A\n\x01\x00\x00\x00\x00\x00\x00\x00xZ\n", 64, nil, false, "not followed by a newline"},
		{"huge binary length", "A\n\xff\xff\xff\xff\xff\xff\xff\xffx\n", 64, nil, false, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAll(t, []byte(tc.in), tc.limit)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var flat [][]string
			for _, e := range got {
				var s []string
				for _, f := range e {
					s = append(s, string(f.Name)+"="+string(f.Value))
					if f.Truncated != tc.trunc {
						t.Fatalf("truncated %v", f.Truncated)
					}
				}
				flat = append(flat, s)
			}
			if len(flat) != len(tc.want) || strings.Join(flat[0], "|") != strings.Join(tc.want[0], "|") {
				t.Fatalf("got %q want %q", flat, tc.want)
			}
		})
	}
}

// FuzzExportParser: any input parses or fails cleanly, within its limit,
// and what parses writes back (export form) to bytes that parse the same.
func FuzzExportParser(f *testing.F) {
	f.Add(journaltest.AppendExport(nil, journaltest.NewEntry(1, "a.service", "hello", "BIN", "x\x00\ny")))
	f.Add([]byte("A=1\nB=2\n\nC\n\x02\x00\x00\x00\x00\x00\x00\x00\n\n\n\n"))
	f.Add([]byte("A\n\xff\xff\xff\xff\xff\xff\xff\x7f"))
	f.Add([]byte("\n\n\nMESSAGE=\xff\xfe\n\n"))
	f.Add([]byte("A=" + strings.Repeat("x", 300) + "\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 128
		entries, _ := parseAll(t, b, limit)
		var again []byte
		for _, e := range entries {
			var je journaltest.Entry
			for _, fl := range e {
				if len(fl.Value) > limit || len(fl.Name) == 0 || len(fl.Name) > maxNameBytes {
					t.Fatalf("field %q of %d bytes", fl.Name, len(fl.Value))
				}
				je = append(je, journaltest.Field{Name: string(fl.Name), Value: fl.Value})
			}
			again = journaltest.AppendExport(again, je)
		}
		back, err := parseAll(t, again, limit)
		if err != nil || len(back) != len(entries) {
			t.Fatalf("re-parse: %v, %d entries of %d", err, len(back), len(entries))
		}
		for i := range back {
			for j := range back[i] {
				if !bytes.Equal(back[i][j].Name, entries[i][j].Name) || !bytes.Equal(back[i][j].Value, entries[i][j].Value) {
					t.Fatalf("entry %d field %d changed", i, j)
				}
			}
		}
	})
}

func TestSameEntry(t *testing.T) {
	a := "s=aa;i=5;b=bb;m=10;t=20;x=30"
	for _, tc := range []struct {
		b    string
		want bool
	}{
		{a, true},
		{"s=aa;i=5;b=bb;m=10;t=20;x=99", true},
		{"s=aa;i=6;b=bb;m=10;t=20;x=30", false},
		{"s=ab;i=5;b=bb;m=10;t=20;x=30", false},
		{"opaque", false},
	} {
		if got := sameEntry(a, tc.b); got != tc.want {
			t.Errorf("sameEntry(%q, %q) = %v", a, tc.b, got)
		}
	}
}
