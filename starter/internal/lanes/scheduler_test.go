package lanes

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestNewChecksShares(t *testing.T) {
	for _, tc := range []struct {
		shares []float64
		ok     bool
	}{
		{[]float64{0}, true},
		{[]float64{0, 0.2, 0.1}, true},
		{[]float64{0.5, 0.5}, true},
		{nil, false},
		{[]float64{-0.1}, false},
		{[]float64{1.1}, false},
		{[]float64{0.6, 0.6}, false},
		{make([]float64, MaxQueues+1), false},
	} {
		if _, err := New(tc.shares); (err == nil) != tc.ok {
			t.Errorf("New(%v): err = %v, want ok=%v", tc.shares, err, tc.ok)
		}
	}
}

func TestSplitTable(t *testing.T) {
	for _, tc := range []struct {
		shares []float64
		n      int
		avail  []int
		want   []int
	}{
		{[]float64{0, 0}, 10, []int{20, 20}, []int{10, 0}},
		{[]float64{0, 0}, 10, []int{4, 20}, []int{4, 6}},
		{[]float64{0, 0.2}, 10, []int{20, 20}, []int{8, 2}},
		{[]float64{0, 0.2}, 10, []int{20, 0}, []int{10, 0}},
		{[]float64{0, 0.2}, 10, []int{0, 3}, []int{0, 3}},
		{[]float64{0, 0.5, 0.5}, 4, []int{9, 9, 9}, []int{0, 2, 2}},
		{[]float64{0}, 0, []int{5}, []int{0}},
	} {
		s, err := New(tc.shares)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Split(tc.n, tc.avail); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("shares %v: Split(%d, %v) = %v, want %v", tc.shares, tc.n, tc.avail, got, tc.want)
		}
	}
}

// A share below one row per claim still comes round: 0.1 of claims of
// one row is every tenth claim.
func TestSplitSmallSharesAccumulate(t *testing.T) {
	s, _ := New([]float64{0, 0.1})
	got := 0
	for range 100 {
		got += s.Split(1, []int{1000, 1000})[1]
	}
	if got != 10 {
		t.Fatalf("lower queue got %d of 100 one-row claims, want 10", got)
	}
}

// item is a row of the model: which queue, its arrival order and time.
type item struct {
	seq int
	at  time.Time
}

// TestSchedulerModel runs the scheduler against a model of queues fed by
// random arrivals on an injected clock and drained by claims of random
// size, and checks after every claim: the grants fill the claim as far as
// rows are due (no slot idles while a row waits); each queue is taken
// from its front (order within a queue); over every stretch in which a
// queue could have filled each claim alone, it got at least its share of
// the rows claimed, less one row per queue (no starvation); and over the
// claims in which a higher queue left rows behind, a lower one got no
// more than its share, plus one row per queue (higher first).
func TestSchedulerModel(t *testing.T) {
	for seed := range uint64(100) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	nq := 1 + rng.IntN(5)
	shares := make([]float64, nq)
	left := 1.0
	for i := range shares {
		if rng.IntN(3) > 0 {
			shares[i] = float64(rng.IntN(int(left*100)+1)) / 100 / 2
			left -= shares[i]
		}
	}
	s, err := New(shares)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_700_000_000, 0) // injected: advanced by the model only
	queues := make([][]item, nq)
	rates := make([]int, nq) // mean arrivals per tick
	for i := range rates {
		rates[i] = rng.IntN(40)
	}
	seq := make([]int, nq)
	lastSeq := make([]int, nq)
	for i := range lastSeq {
		lastSeq[i] = -1
	}
	// Per queue: rows it got and rows claimed in all while it was
	// backlogged (window), and while a higher queue left rows behind.
	type window struct{ got, total int }
	backlogged := make([]window, nq)
	behind := make([]window, nq)
	slack := nq
	for tick := range 1000 {
		clock = clock.Add(time.Duration(1+rng.IntN(100)) * time.Millisecond)
		if tick%200 == 0 { // the load changes now and then: bursts, lulls
			for i := range rates {
				rates[i] = rng.IntN(40)
			}
		}
		for i := range queues {
			for range rng.IntN(2*rates[i] + 1) {
				queues[i] = append(queues[i], item{seq[i], clock})
				seq[i]++
			}
		}
		n := 1 + rng.IntN(64)
		avail := make([]int, nq)
		due := 0
		for i, q := range queues {
			avail[i] = len(q)
			due += len(q)
		}
		grant := s.Split(n, avail)
		sum := 0
		for i, g := range grant {
			if g < 0 || g > avail[i] {
				t.Fatalf("tick %d: queue %d granted %d of %d due", tick, i, g, avail[i])
			}
			sum += g
		}
		if sum != min(n, due) {
			t.Fatalf("tick %d: granted %d in all, want min(%d, %d due)", tick, sum, n, due)
		}
		for i, g := range grant {
			for _, it := range queues[i][:g] {
				if it.seq != lastSeq[i]+1 {
					t.Fatalf("tick %d: queue %d sent row %d after %d", tick, i, it.seq, lastSeq[i])
				}
				lastSeq[i] = it.seq
			}
			queues[i] = queues[i][g:]
		}
		higherLeft := false
		for i := range grant {
			if avail[i] >= n {
				backlogged[i].got += grant[i]
				backlogged[i].total += sum
				if need := int(shares[i]*float64(backlogged[i].total)) - slack; backlogged[i].got < need {
					t.Fatalf("shares %v: queue %d backlogged got %d of %d rows, below its share %v less %d",
						shares, i, backlogged[i].got, backlogged[i].total, shares[i], slack)
				}
			} else {
				backlogged[i] = window{}
			}
			if higherLeft {
				behind[i].got += grant[i]
				behind[i].total += sum
				if most := int(shares[i]*float64(behind[i].total)) + slack; behind[i].got > most {
					t.Fatalf("shares %v: queue %d got %d of %d rows while a higher queue waited, above its share %v plus %d",
						shares, i, behind[i].got, behind[i].total, shares[i], slack)
				}
			}
			if grant[i] < avail[i] {
				higherLeft = true
			}
		}
	}
}
