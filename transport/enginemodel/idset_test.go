package enginemodel

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// idSet against a map: random adds, removes and cuts over a small id
// range (so runs touch, merge and split), checked after every step.
func TestIDSetMatchesAMap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var s idSet
		want := map[int64]bool{}
		for step := range 400 {
			id := 1 + rng.Int64N(40)
			switch op := rng.IntN(10); {
			case op < 6:
				s.add(id)
				want[id] = true
			case op < 9:
				s.remove(id)
				delete(want, id)
			default:
				s.removeThrough(id)
				for k := range want {
					if k <= id {
						delete(want, k)
					}
				}
			}
			keys := slices.Sorted(maps.Keys(want))
			if got := s.ids(); !slices.Equal(got, keys) || s.len() != len(keys) {
				t.Fatalf("seed %d step %d: ids %v len %d, want %v", seed, step, got, s.len(), keys)
			}
			for i, r := range s.runs {
				if r.lo > r.hi || (i > 0 && s.runs[i-1].hi+1 >= r.lo) {
					t.Fatalf("seed %d step %d: runs not disjoint and apart: %v", seed, step, s.runs)
				}
			}
			from := 1 + rng.Int64N(40)
			h := from - 1
			for want[h+1] {
				h++
			}
			if got := s.runFrom(from); got != h {
				t.Fatalf("seed %d step %d: runFrom(%d) = %d, want %d (set %v)", seed, step, from, got, h, keys)
			}
		}
	}
}
