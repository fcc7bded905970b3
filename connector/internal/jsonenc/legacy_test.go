package jsonenc

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"testing"
	"unicode/utf8"
)

// legacyAppendStringContent is the escaper as it was before the
// store-the-whole-word rewrite (an append per clean run and per escape),
// kept as the reference the differential tests compare with: payloads
// must stay byte for byte what they were.
func legacyAppendStringContent(dst, s []byte) ([]byte, int) {
	bad := 0
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			m := legacySpecial8(binary.LittleEndian.Uint64(s[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		} else if safe[s[i]] {
			i++
			continue
		}
		b := s[i]
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			bad++
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
		i++
		start = i
	}
	return append(dst, s[start:]...), bad
}

// legacySpecial8 is special8 as it was, with the legacy escaper.
func legacySpecial8(w uint64) uint64 {
	hasLess := (w - sp) & ^w & hi
	x := w ^ quot
	hasQuot := (x - lo7) & ^x & hi
	y := w ^ bsl
	hasBsl := (y - lo7) & ^y & hi
	return (w & hi) | hasLess | hasQuot | hasBsl
}

// checkSameAsLegacy compares AppendStringContent with the legacy escaper
// for s appended after prefix, with no, little and ample spare capacity in
// dst (the new escaper grows dst itself and writes words past its output).
func checkSameAsLegacy(t *testing.T, prefix, s []byte) {
	t.Helper()
	want, wantBad := legacyAppendStringContent(append([]byte(nil), prefix...), s)
	for _, spare := range []int{0, 3, len(s) + 64} {
		dst := make([]byte, len(prefix), len(prefix)+spare)
		copy(dst, prefix)
		got, gotBad := AppendStringContent(dst, s)
		if !bytes.Equal(got, want) || gotBad != wantBad {
			t.Fatalf("AppendStringContent(%q, %q) with %d spare = %q, %d; legacy %q, %d",
				prefix, s, spare, got, gotBad, want, wantBad)
		}
	}
}

// TestAppendStringContentSameAsLegacy puts every kind of byte that needs
// attention (and pairs of them) at every position of strings from 0 to 24
// bytes long: inside a full word, in the shifted last word and in strings
// shorter than a word, where the new escaper takes different paths.
func TestAppendStringContentSameAsLegacy(t *testing.T) {
	specials := []string{"\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x01", "\x1f", "\x7f", " ",
		"é", "✓", "😀", "\xff", "\x80", "\xe4\xb8", "\xed\xa0\x80", "\xf0\x9f\x98"}
	base := "abcdefghijklmnopqrstuvwx"
	for n := 0; n <= len(base); n++ {
		checkSameAsLegacy(t, nil, []byte(base[:n]))
		for i := 0; i <= n; i++ {
			for _, a := range specials {
				in := base[:i] + a + base[i:n]
				checkSameAsLegacy(t, nil, []byte(in))
				checkSameAsLegacy(t, []byte(`{"k":"`), []byte(in))
				for j := i; j <= n; j++ {
					for _, b := range specials {
						checkSameAsLegacy(t, nil, []byte(base[:i]+a+base[i:j]+b+base[j:n]))
					}
				}
			}
		}
	}
	// Longer strings: the block scan (16 bytes a step on amd64) starts
	// them and comes back after three clean words, so put specials at
	// every position of 80 bytes, alone and with a second one after.
	long := strings.Repeat("The quick brown fox jumps. ", 3)[:80]
	few := []string{"\"", "\x00", "é", "\xff", "😀"} // one of each path, for the pairs
	for i := 0; i <= len(long); i++ {
		for _, a := range specials {
			checkSameAsLegacy(t, nil, []byte(long[:i]+a+long[i:]))
		}
		for _, a := range few {
			for j := i; j <= len(long); j++ {
				for _, b := range few {
					checkSameAsLegacy(t, nil, []byte(long[:i]+a+long[i:j]+b+long[j:]))
				}
			}
		}
	}
	// Escapes grow the output up to six times the input: every byte one.
	for _, c := range []string{"\x00", "\xff", "\""} {
		for n := 0; n <= 40; n++ {
			checkSameAsLegacy(t, nil, bytes.Repeat([]byte(c), n))
		}
	}
}

// FuzzAppendStringContentSameAsLegacy is the differential fuzz test of the
// escaper against the legacy one, with any prefix already in dst.
func FuzzAppendStringContentSameAsLegacy(f *testing.F) {
	for _, s := range []string{"", "a", "abcdefgh\"", "\"\\\x00\x1f\x7f", "\xff\xfe", "中文 ✓ 😀",
		"\xed\xa0\x80", "\xf0\x9f\x98", `{"ts":1,"msg":"x"}`, "1764000000123 INFO [http] seq=000000001 request",
		`{"ts":1764000000123,"level":"INFO","component":"http","seq":"000123456","msg":"request served user k12=4711 latency"}`,
		"1764000000123 INFO [http] Bestellung übermittelt für Kunde 4711 — Lieferung nach München, Größe XL, Preis 12,50 € 注文 完了 ✓ status=ok"} {
		f.Add([]byte("p"), []byte(s))
	}
	f.Fuzz(func(t *testing.T, prefix, s []byte) {
		checkSameAsLegacy(t, prefix, s)
	})
}

// BenchmarkAppendStringLegacy measures the legacy escaper on the lines of
// BenchmarkAppendString, in the same run for a fair comparison.
func BenchmarkAppendStringLegacy(b *testing.B) {
	benchEscape(b, func(dst, s []byte) []byte {
		dst = append(dst, '"')
		dst, _ = legacyAppendStringContent(dst, s)
		return append(dst, '"')
	})
}
