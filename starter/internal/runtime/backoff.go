package runtime

import (
	"math/rand/v2"
	"time"
)

// expBackoff returns min(maxD, base·2^n) for n ≥ 0, without overflow.
// Java computes `base << n` and wraps for large n; we saturate instead.
func expBackoff(n int, base, maxD time.Duration) time.Duration {
	if base <= 0 {
		return 0
	}
	if maxD < base {
		maxD = base
	}
	d := base
	for i := 0; i < n; i++ {
		if d >= maxD/2 {
			return maxD
		}
		d *= 2
	}
	return min(d, maxD)
}

// jitter shortens d by up to a fifth, at random, so that many agents that
// failed together do not retry in lock-step; the result never exceeds d,
// so configured maxima stay maxima.
func jitter(d time.Duration) time.Duration {
	if d < 5 {
		return d
	}
	return d - time.Duration(rand.Int64N(int64(d/5)))
}
