package file

import (
	"slices"
	"testing"
)

func TestSmoke(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "one\ntwo\nthr")
	h.open()
	got := h.pollAll()
	if !slices.Equal(texts(got), []string{"one", "two"}) {
		t.Fatalf("got %v", got)
	}
	if got[1].Offset != 8 || got[1].Line != 2 || got[1].File != h.path("a.log") {
		t.Fatalf("bad meta %+v", got[1])
	}
	h.write("a.log", "ee\n")
	got = h.pollAll()
	if !slices.Equal(texts(got), []string{"three"}) {
		t.Fatalf("got %v", got)
	}
	h.write("a.log", "four\n")
	h.restart()
	got = h.pollAll()
	if !slices.Equal(texts(got), []string{"four"}) || got[0].Line != 4 {
		t.Fatalf("after restart got %+v", got)
	}
	t.Logf("saved: %s", h.saved)
}
