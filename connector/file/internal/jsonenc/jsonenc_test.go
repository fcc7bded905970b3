package jsonenc

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendStringTable(t *testing.T) {
	cases := []struct {
		in, want string
		bad      int
	}{
		{"", `""`, 0},
		{"plain text", `"plain text"`, 0},
		{`q"b\`, `"q\"b\\"`, 0},
		{"a\nb\rc\td\be\ff", `"a\nb\rc\td\be\ff"`, 0},
		{"\x00\x1f\x7f", `"\u0000\u001f` + "\x7f" + `"`, 0},
		{"中文 ✓", `"中文 ✓"`, 0},
		{"a\xffb", `"a\ufffdb"`, 1},
		{"\xe4\xb8", `"\ufffd\ufffd"`, 2},
		{"</script>", `"</script>"`, 0},
	}
	for _, c := range cases {
		got, bad := AppendString(nil, []byte(c.in))
		if string(got) != c.want || bad != c.bad {
			t.Errorf("AppendString(%q) = %s, %d; want %s, %d", c.in, got, bad, c.want, c.bad)
		}
	}
}

func TestAppendLatin1(t *testing.T) {
	got := AppendLatin1Content(nil, []byte("caf\xe9 \"x\"\n"))
	if string(got) != `café \"x\"\n` {
		t.Fatalf("got %s", got)
	}
}

func TestAppendInt(t *testing.T) {
	for _, v := range []int64{0, 1, 9, 10, 12345, -7, math.MaxInt64, math.MinInt64 + 1} {
		if got := string(AppendInt(nil, v)); got != strconv.FormatInt(v, 10) {
			t.Errorf("AppendInt(%d) = %s", v, got)
		}
	}
	if got := string(AppendUint(nil, math.MaxUint64)); got != strconv.FormatUint(math.MaxUint64, 10) {
		t.Errorf("AppendUint max = %s", got)
	}
	if got := string(AppendHex64(nil, 0xdeadbeef)); got != "00000000deadbeef" {
		t.Errorf("AppendHex64 = %s", got)
	}
}

// FuzzAppendString checks that any input yields valid JSON that decodes
// to the input with invalid UTF-8 replaced by U+FFFD.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\n\r\t", "\x00\x01\xff", "中文", "\xed\xa0\x80", "\u2028"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, _ := AppendString(nil, in)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q for %q", out, in)
		}
		if strings.ContainsAny(string(out), "\n\r") {
			t.Fatalf("raw newline in %q", out)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if want := strings.ToValidUTF8(string(in), "\uFFFD"); back != want && !replacementsOnly(back, string(in)) {
			t.Fatalf("round trip %q -> %q", in, back)
		}
		if !utf8.Valid(out) {
			t.Fatalf("output not UTF-8: %q", out)
		}
		lat := append([]byte{'"'}, AppendLatin1Content(nil, in)...)
		lat = append(lat, '"')
		var lback string
		if err := json.Unmarshal(lat, &lback); err != nil {
			t.Fatalf("latin1 output %q: %v", lat, err)
		}
		if len([]rune(lback)) != len(in) {
			t.Fatalf("latin1 rune count %d != %d", len([]rune(lback)), len(in))
		}
	})
}

// replacementsOnly accepts the per-byte replacement the escaper does
// (strings.ToValidUTF8 merges runs of invalid bytes into one U+FFFD).
func replacementsOnly(got, in string) bool {
	var b strings.Builder
	for i := 0; i < len(in); {
		r, size := utf8.DecodeRuneInString(in[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(in[i : i+size])
		}
		i += size
	}
	return got == b.String()
}
