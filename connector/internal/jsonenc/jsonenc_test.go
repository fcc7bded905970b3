package jsonenc

import (
	"encoding/json"
	"fmt"
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

// TestAppendStringEveryPosition puts one or two bytes needing attention at
// every position of the words the escaper reads 8 at a time (the word
// scan must find the first of them, whatever follows it) and compares
// with a byte-by-byte reference.
func TestAppendStringEveryPosition(t *testing.T) {
	specials := []string{"\"", "\\", "\n", "\x00", "\x01", "\x1f", "\x7f", "é", "✓", "\xff", "\xe4\xb8"}
	base := "abcdefghijklmnopqrstuvwx"
	for i := 0; i <= len(base); i++ {
		for _, a := range specials {
			for j := i; j <= len(base); j++ {
				for _, b := range specials {
					in := base[:i] + a + base[i:j] + b + base[j:]
					got, gotBad := AppendString(nil, []byte(in))
					want, wantBad := referenceEscape(in)
					if string(got) != want || gotBad != wantBad {
						t.Fatalf("AppendString(%q) = %s, %d; want %s, %d", in, got, gotBad, want, wantBad)
					}
				}
			}
		}
	}
}

// referenceEscape is AppendString one rune at a time, the obvious way.
func referenceEscape(s string) (string, int) {
	var b strings.Builder
	bad := 0
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
			bad++
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String(), bad
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

// BenchmarkAppendString escapes log lines like the end-to-end benchmark's:
// plain text, JSON (a quote every few bytes to escape), and text with
// multi-byte UTF-8.
func BenchmarkAppendString(b *testing.B) {
	benchEscape(b, func(dst, s []byte) []byte {
		dst, _ = AppendString(dst, s)
		return dst
	})
}

func benchEscape(b *testing.B, escape func(dst, s []byte) []byte) {
	lines := []struct{ name, s string }{
		{"plain", `1764000000123 INFO [http] seq=000123456 request served user k12=4711 latency order retry timeout payload session opened closed cache miss hit queue flushed upstream status request served user k7=99`},
		{"json", `{"ts":1764000000123,"level":"INFO","component":"http","seq":"000123456","msg":"request served user k12=4711 latency order retry timeout payload session opened closed cache miss hit queue flushed"}`},
		{"utf8", `1764000000123 INFO [http] Bestellung übermittelt für Kunde 4711 — Lieferung nach München, Größe XL, Preis 12,50 € (Rabatt 10 %) 注文 完了 ✓ status=ok`},
	}
	for _, l := range lines {
		in := []byte(l.s)
		b.Run(l.name, func(b *testing.B) {
			dst := make([]byte, 0, 2*len(in)+2)
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				dst = escape(dst[:0], in)
			}
		})
	}
}

// TestDecimal formats sequences with steps of every size, carries through
// many nines, jumps back and beyond the step bound, and checks each value
// against strconv.
func TestDecimal(t *testing.T) {
	cases := []struct {
		name string
		vals []int64
	}{
		{"from zero by one", seq(0, 1, 1200)},
		{"carries", []int64{8, 9, 10, 99, 100, 999, 1000, 99999, 100000, 100001, 999999999, 1000000000}},
		{"line lengths", seq(0, 187, 2000)},
		{"big steps", []int64{5, 5 + maxDecimalStep, 6 + 2*maxDecimalStep, 7 + 4*maxDecimalStep}},
		{"back and forth", []int64{1000, 10, 11, 0, 0, 1, math.MaxInt64 - 3, math.MaxInt64, 12}},
		{"negative", []int64{-1, 0, -12, 5, 7, -9223372036854775807, 8}},
		{"near the top", []int64{math.MaxInt64 - maxDecimalStep, math.MaxInt64}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d Decimal
			for _, v := range c.vals {
				if got, want := string(d.Append([]byte("x"), v)), "x"+strconv.FormatInt(v, 10); got != want {
					t.Fatalf("Append(%d) = %s, want %s", v, got, want)
				}
			}
		})
	}
}

func seq(from, step int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)*step
	}
	return out
}

// FuzzDecimal checks any sequence of values against strconv.
func FuzzDecimal(f *testing.F) {
	f.Add(int64(0), int64(1), int64(9), uint16(100))
	f.Add(int64(999), int64(1), int64(1), uint16(3))
	f.Add(int64(-5), int64(7), int64(300), uint16(50))
	f.Fuzz(func(t *testing.T, start, step1, step2 int64, n uint16) {
		var d Decimal
		v := start
		for i := range int(n % 512) {
			if got, want := string(d.Append(nil, v)), strconv.FormatInt(v, 10); got != want {
				t.Fatalf("Append(%d) = %s, want %s", v, got, want)
			}
			if i%2 == 0 {
				v += step1
			} else {
				v += step2
			}
		}
	})
}

// BenchmarkDecimal formats line numbers and offsets of 200-byte lines,
// with Decimal and with strconv.
func BenchmarkDecimal(b *testing.B) {
	dst := make([]byte, 0, 64)
	b.Run("decimal", func(b *testing.B) {
		var line, off Decimal
		var i int64
		for b.Loop() {
			i++
			dst = off.Append(line.Append(dst[:0], 1_000_000+i), 200_000_000+i*197)
		}
	})
	b.Run("strconv", func(b *testing.B) {
		var i int64
		for b.Loop() {
			i++
			dst = strconv.AppendInt(strconv.AppendInt(dst[:0], 1_000_000+i, 10), 200_000_000+i*197, 10)
		}
	})
}
