package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is a capped exponential backoff: attempt n waits Initial·2^n, but
// never more than Max.
//
// Jitter rule ("equal jitter"): a jittered delay is drawn uniformly from
// [d-d/2, d], d being the un-jittered delay. Only shortening, never
// lengthening, keeps a configured maximum a true maximum. Drawing from the
// upper half of d, rather than from [0, d], keeps the pause from collapsing
// to nothing, so a dead engine is never hammered; below the ceiling the
// shortest wait of attempt n is still the full wait of attempt n-1, so the
// backoff keeps growing. A window half as wide as the delay spreads a
// cohort of agents cut off by the same outage: at a 30 s ceiling they come
// back over 15 s instead of all at once.
//
// Degenerate values never yield a zero or negative wait, which would turn a
// retry loop into a spin: a non-positive Initial starts at Max, a
// non-positive Max caps at Initial, and when both are non-positive every
// delay is one nanosecond. An Initial above Max gives Max, the ceiling
// always wins.
//
// A Policy is a value without state; it is safe for concurrent use when its
// Rand is.
type Policy struct {
	Initial time.Duration
	Max     time.Duration
	// Rand returns a uniform value in [0, n) for n > 0; nil means
	// math/rand/v2's Int64N. Tests set it to get exact delays. A value
	// outside [0, n) is clamped into it, so no source can push a delay
	// past the bounds above.
	Rand func(n int64) int64
}

// bounds returns the first delay and the ceiling after the fallbacks
// documented on Policy; 0 < first ≤ ceiling.
func (p Policy) bounds() (first, ceiling time.Duration) {
	first, ceiling = p.Initial, p.Max
	if first <= 0 {
		first = ceiling
	}
	if ceiling <= 0 {
		ceiling = first
	}
	if first <= 0 {
		return 1, 1
	}
	return min(first, ceiling), ceiling
}

// Delay returns the un-jittered wait before attempt n (0-based; a negative
// n counts as 0): min(Max, Initial·2^n). It saturates at Max instead of
// overflowing, and never decreases as n grows.
func (p Policy) Delay(n int) time.Duration {
	first, ceiling := p.bounds()
	n = max(n, 0)
	// first ≤ ⌊ceiling/2^n⌋ exactly when first·2^n ≤ ceiling, so the shift
	// below cannot overflow; for n ≥ 63 the quotient is 0 < first.
	if n < 63 && first <= ceiling>>n {
		return first << n
	}
	return ceiling
}

// Jittered returns Delay(n) shortened at random by up to half (see the
// jitter rule on Policy). It is always > 0 and never above Delay(n).
func (p Policy) Jittered(n int) time.Duration {
	d := p.Delay(n)
	span := int64(d / 2)
	var r int64
	if p.Rand == nil {
		r = rand.Int64N(span + 1)
	} else {
		r = min(max(p.Rand(span+1), 0), span)
	}
	return d - time.Duration(r)
}

// Sleep waits d or until ctx is done, whichever comes first. It returns
// ctx.Err() when ctx ended the wait, or is already done, and nil otherwise.
// A non-positive d does not wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
