package tracker

import (
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// TestPriorsBounded: a new tracker keeps MaxPriors priors findable and
// drops the oldest beyond, handing back the file whose state carried it.
func TestPriorsBounded(t *testing.T) {
	tk := New[int, int]()
	for f := range MaxPriors + 1 {
		tk.Add(f, "k"+string(rune('a'+f%26))+time.Duration(f).String(), f, "/p")
	}
	sum := func(i int) fingerprint.Sum { return fingerprint.Sum{Len: 8, Hash: uint64(i)} }
	for f := range MaxPriors {
		if _, dropped := tk.SetPrior(f, &Prior{Content: Content{Sum: sum(f)}}, 0, time.Time{}); dropped {
			t.Fatalf("prior %d of %d dropped", f, MaxPriors)
		}
	}
	if tk.PriorWithSum(sum(0), -1) == nil {
		t.Fatal("the oldest prior is not findable")
	}
	holder, dropped := tk.SetPrior(MaxPriors, &Prior{Content: Content{Sum: sum(MaxPriors)}}, 0, time.Time{})
	if !dropped || holder != 0 {
		t.Fatalf("SetPrior beyond MaxPriors dropped (%d, %v), want (0, true)", holder, dropped)
	}
	if tk.PriorWithSum(sum(0), -1) != nil || tk.PriorOf(0) != nil {
		t.Fatal("the oldest prior is still findable")
	}
	if tk.PriorWithSum(sum(1), -1) == nil || tk.PriorWithSum(sum(MaxPriors), -1) == nil {
		t.Fatal("a newer prior is gone")
	}
}
