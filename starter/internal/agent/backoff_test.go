package agent

import (
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// shortestDraw pins a Policy's jitter to its largest shortening: every
// pause is exactly half of the un-jittered delay.
func shortestDraw(n int64) int64 { return n - 1 }

func TestSenderHoldsFollowTheBackoff(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := &sendLoop{
		now:        func() time.Time { return now },
		retryWait:  backoff.Policy{Initial: time.Second, Max: 3 * time.Second, Rand: shortestDraw},
		rejectWait: backoff.Policy{Max: 10 * time.Second, Rand: shortestDraw},
		ctr:        &counters{},
		pub:        &published{},
	}
	for i, step := range []struct {
		err  error
		want time.Duration // hold after this Send; 0: none
	}{
		{transport.ErrUnavailable, 500 * time.Millisecond},
		{transport.ErrUnavailable, time.Second},
		{transport.ErrUnavailable, 1500 * time.Millisecond},
		{transport.ErrUnavailable, 1500 * time.Millisecond}, // capped
		{transport.ErrRejected, 5 * time.Second},            // always the maximum, jittered
		{nil, 0},                                            // success resets the streak
		{transport.ErrUnavailable, 500 * time.Millisecond},
	} {
		res := &jobResult{err: step.err}
		s.afterSend(t.Context(), res)
		var got time.Duration
		if !res.retryAt.IsZero() {
			got = res.retryAt.Sub(now)
		}
		if got != step.want {
			t.Fatalf("step %d (%v): hold %v, want %v", i, step.err, got, step.want)
		}
	}
}

func TestSendLoopBackoffsComeFromTheConfig(t *testing.T) {
	cfg := testConfig(t)
	cfg.Retry.Backoff, cfg.Retry.BackoffMax = 250*time.Millisecond, 300*time.Second
	cc := clientOptions(t, cfg)
	cc.InitialBackoff, cc.MaxBackoff = 100*time.Millisecond, 30*time.Second
	r := &Agent{opts: newOptions(t, cfg, t.TempDir(), nil, nil), now: time.Now}
	for _, tt := range []struct {
		nonMode bool
		retry   backoff.Policy
	}{
		{false, backoff.Policy{Initial: 250 * time.Millisecond, Max: 300 * time.Second}},
		// NON mode ignores retry.*: the transport's own bounds apply.
		{true, backoff.Policy{Initial: 100 * time.Millisecond, Max: 30 * time.Second}},
	} {
		s := r.newSendLoop(nil, nil, tt.nonMode)
		if s.retryWait.Initial != tt.retry.Initial || s.retryWait.Max != tt.retry.Max {
			t.Errorf("nonMode=%v: retry backoff %v..%v, want %v..%v", tt.nonMode,
				s.retryWait.Initial, s.retryWait.Max, tt.retry.Initial, tt.retry.Max)
		}
		if d := s.rejectWait.Delay(0); d != 30*time.Second || s.rejectWait.Delay(9) != d {
			t.Errorf("nonMode=%v: reject hold %v, want output.max-backoff-ms (30s) every time", tt.nonMode, d)
		}
	}
}
