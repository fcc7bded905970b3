package lanes

import (
	"errors"
	"fmt"
	"math"
)

// Scheduler splits claim slots among queues given in priority order,
// highest first. Each queue has a minimum share of the rows claimed while
// it has rows waiting; what the minimums leave goes to the highest queue
// with rows, then the next. So a higher queue is always served first,
// and a lower one, while it has rows, still gets at least its share of
// what is claimed, give or take one row per queue.
//
// The minimum is kept with a credit per queue: a claim adds share ×
// (rows claimed) to the credit of every queue with rows waiting, each
// queue first gets the whole rows of its credit, and the rows it gets
// are paid from it. A queue that is emptied, or has no rows, keeps no
// credit: an idle or trickling queue saves up nothing to burst with later.
type Scheduler struct {
	share  []float64
	credit []float64
}

// creditEpsilon absorbs the rounding of adding shares up: ten claims of
// 0.1 make a whole row.
const creditEpsilon = 1e-9

// MaxQueues bounds the queues of one Scheduler.
const MaxQueues = 64

// New returns a Scheduler for len(shares) queues, highest priority first;
// shares[i] is queue i's minimum share, each in 0..1 and at most 1 in
// all.
func New(shares []float64) (*Scheduler, error) {
	if len(shares) == 0 || len(shares) > MaxQueues {
		return nil, fmt.Errorf("lanes: %d queues; want 1 to %d", len(shares), MaxQueues)
	}
	sum := 0.0
	for i, s := range shares {
		if math.IsNaN(s) || s < 0 || s > 1 {
			return nil, fmt.Errorf("lanes: share %v of queue %d; want 0 to 1", s, i)
		}
		sum += s
	}
	if sum > 1+1e-9 {
		return nil, errors.New("lanes: the minimum shares add up to more than 1")
	}
	return &Scheduler{share: append([]float64(nil), shares...), credit: make([]float64, len(shares))}, nil
}

// Split returns how many of n rows to claim from each queue, given that
// queue i has avail[i] rows due (len(avail) is the number of queues).
// The grants add up to min(n, the rows due): no row is left waiting
// while a slot is free.
func (s *Scheduler) Split(n int, avail []int) []int {
	grant := make([]int, len(s.share))
	total := 0
	for i := range grant {
		total += max(avail[i], 0)
	}
	total = min(total, max(n, 0))
	if total == 0 {
		clear(s.credit)
		return grant
	}
	left := total
	// The minimums first, highest queue first when they meet.
	for i, sh := range s.share {
		if avail[i] <= 0 {
			s.credit[i] = 0
			continue
		}
		s.credit[i] += sh * float64(total)
		g := min(int(s.credit[i]+creditEpsilon), avail[i], left)
		grant[i] = g
		left -= g
	}
	// What is left, in priority order.
	for i := range grant {
		if left == 0 {
			break
		}
		g := min(avail[i]-grant[i], left)
		if g > 0 {
			grant[i] += g
			left -= g
		}
	}
	for i := range grant {
		if avail[i] <= 0 || grant[i] >= avail[i] {
			s.credit[i] = 0
			continue
		}
		s.credit[i] = max(0, s.credit[i]-float64(grant[i]))
	}
	return grant
}
