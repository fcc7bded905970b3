package fingerprint

import (
	"bytes"
	"hash/fnv"
	"strings"
	"testing"
)

func TestObserveGrowsByPrefix(t *testing.T) {
	p := New(8)
	if !p.Matches([]byte("anything")) {
		t.Fatal("empty print must match any file")
	}
	p.Observe([]byte("abc"), 0)
	p.Observe([]byte("xyz"), 10) // not contiguous: ignored
	if p.Sum() != Of([]byte("abc")) {
		t.Fatalf("got %+v, want the sum of %q", p.Sum(), "abc")
	}
	p.Observe([]byte("bcdefghij"), 1)
	if p.Sum() != Of([]byte("abcdefgh")) || !p.Full() {
		t.Fatalf("got %+v, want the full sum of %q", p.Sum(), "abcdefgh")
	}
	if !p.Matches([]byte("abcdefghZZZ")) || p.Matches([]byte("abcdefg")) || p.Matches([]byte("abXdefgh")) {
		t.Fatal("prefix matching wrong")
	}
	if !MatchesSum([]byte("abcdefgh-more"), p.Sum()) || MatchesSum([]byte("abc"), p.Sum()) {
		t.Fatal("sum matching wrong")
	}
}

// The inlined FNV-1a must give the hashes positions saved by earlier
// versions (hash/fnv) hold.
func TestOfIsFNV1a(t *testing.T) {
	for _, s := range []string{"", "a", "2024-05-17T10:00:00Z INFO start\n", strings.Repeat("xyz", 400)} {
		h := fnv.New64a()
		h.Write([]byte(s))
		if got := Of([]byte(s)); got.Hash != h.Sum64() || got.Len != len(s) {
			t.Errorf("Of(%.20q) = %+v, want hash %x", s, got, h.Sum64())
		}
	}
}

func TestRead(t *testing.T) {
	b, err := Read(bytes.NewReader([]byte("short")), 16, nil)
	if err != nil || string(b) != "short" {
		t.Fatalf("%q %v", b, err)
	}
	b, err = Read(bytes.NewReader(bytes.Repeat([]byte("x"), 100)), 16, nil)
	if err != nil || len(b) != 16 {
		t.Fatalf("%d %v", len(b), err)
	}
}

func TestPrefixes(t *testing.T) {
	b := []byte("the first bytes of a log file\n")
	lens := []int{0, 1, 5, 5, 17, len(b)}
	got := Prefixes(b, lens)
	if len(got) != len(lens) {
		t.Fatalf("%d sums for %d lengths", len(got), len(lens))
	}
	for i, n := range lens {
		if got[i] != Of(b[:n]) {
			t.Errorf("prefix %d: %+v, want %+v", n, got[i], Of(b[:n]))
		}
	}
}
