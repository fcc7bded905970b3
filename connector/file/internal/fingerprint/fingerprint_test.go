package fingerprint

import (
	"bytes"
	"testing"
)

func TestObserveGrowsByPrefix(t *testing.T) {
	p := New(8)
	if !p.Matches([]byte("anything")) {
		t.Fatal("empty print must match any file")
	}
	p.Observe([]byte("abc"), 0)
	p.Observe([]byte("xyz"), 10) // not contiguous: ignored
	if string(p.Bytes()) != "abc" {
		t.Fatalf("got %q", p.Bytes())
	}
	p.Observe([]byte("bcdefghij"), 1)
	if string(p.Bytes()) != "abcdefgh" || !p.Full() {
		t.Fatalf("got %q", p.Bytes())
	}
	if !p.Matches([]byte("abcdefghZZZ")) || p.Matches([]byte("abcdefg")) || p.Matches([]byte("abXdefgh")) {
		t.Fatal("prefix matching wrong")
	}
	if !MatchesSum([]byte("abcdefgh-more"), p.Sum()) || MatchesSum([]byte("abc"), p.Sum()) {
		t.Fatal("sum matching wrong")
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
