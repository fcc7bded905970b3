package client

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff returns the wait before retry n (0-based): initial·2^n capped at
// max, then jittered into [d/2, d] so that many agents cut off by the same
// outage do not come back in lockstep.
func backoff(n int, initial, maxWait time.Duration) time.Duration {
	d := maxWait
	if n < 62 {
		if s := initial << n; s > 0 && s < maxWait && s>>n == initial {
			d = s
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
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
