package agent

import (
	"fmt"
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
		conn string        // Snapshot's Connection after it
	}{
		{transport.ErrUnavailable, 500 * time.Millisecond, "unavailable"},
		{transport.ErrUnavailable, time.Second, "unavailable"},
		{transport.ErrUnavailable, 1500 * time.Millisecond, "unavailable"},
		{transport.ErrUnavailable, 1500 * time.Millisecond, "unavailable"}, // capped
		{transport.ErrRejected, 5 * time.Second, "rejected"},               // always the maximum, jittered
		// Refusals of our settings take the REJECTED path (output.on-refusal: retry).
		{fmt.Errorf("authenticate: %w", transport.ErrAuthFailed), 5 * time.Second, "auth_failed"},
		{fmt.Errorf("batch 7: %w", transport.ErrDecryptFailed), 5 * time.Second, "decrypt_failed"},
		{nil, 0, "connected"}, // success resets the streak
		{transport.ErrUnavailable, 500 * time.Millisecond, "unavailable"},
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
		if c := s.pub.connection; c != step.conn {
			t.Fatalf("step %d (%v): connection %q, want %q", i, step.err, c, step.conn)
		}
	}
}

// With output.on-refusal: exit the loop stops the agent: the sender sets
// no hold, only the state.
func TestSenderSetsNoHoldWhenRefusalsExit(t *testing.T) {
	s := &sendLoop{
		now:           time.Now,
		rejectWait:    backoff.Policy{Max: 10 * time.Second},
		ctr:           &counters{},
		pub:           &published{},
		exitOnRefusal: true,
	}
	res := &jobResult{err: transport.ErrAuthFailed}
	s.afterSend(t.Context(), res)
	if !res.retryAt.IsZero() || !s.holdUntil.IsZero() || s.pub.connection != "auth_failed" {
		t.Fatalf("retryAt %v hold %v connection %q, want no hold and auth_failed", res.retryAt, s.holdUntil, s.pub.connection)
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
