package tracker

import (
	"strconv"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// TestPriorsBounded: a new tracker keeps MaxPriors priors findable and
// drops the oldest beyond, handing back the file whose state carried it.
func TestPriorsBounded(t *testing.T) {
	tk := New[*tf, int]()
	files := make([]*tf, MaxPriors+1)
	for i := range files {
		files[i] = &tf{n: i}
		tk.Add(files[i], "k"+strconv.Itoa(i), i, "/p")
	}
	sum := func(i int) fingerprint.Sum { return fingerprint.Sum{Len: 8, Hash: uint64(i)} }
	for f := range MaxPriors {
		if _, dropped := tk.SetPrior(files[f], &Prior{Content: Content{Sum: sum(f)}}, 0, time.Time{}); dropped {
			t.Fatalf("prior %d of %d dropped", f, MaxPriors)
		}
	}
	if tk.PriorWithSum(sum(0), -1) == nil {
		t.Fatal("the oldest prior is not findable")
	}
	holder, dropped := tk.SetPrior(files[MaxPriors], &Prior{Content: Content{Sum: sum(MaxPriors)}}, 0, time.Time{})
	if !dropped || holder != files[0] {
		t.Fatalf("SetPrior beyond MaxPriors dropped (%d, %v), want (0, true)", num(holder), dropped)
	}
	if tk.PriorWithSum(sum(0), -1) != nil || tk.PriorOf(files[0]) != nil {
		t.Fatal("the oldest prior is still findable")
	}
	if tk.PriorWithSum(sum(1), -1) == nil || tk.PriorWithSum(sum(MaxPriors), -1) == nil {
		t.Fatal("a newer prior is gone")
	}
}
