package relay

import (
	"fmt"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	base, max := 250*time.Millisecond, 5*time.Second
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := backoff(base, max, i+1); got != w {
			t.Errorf("backoff after %d failures = %v, want %v", i+1, got, w)
		}
	}
	if got := backoff(base, max, 1000); got != max {
		t.Errorf("backoff after 1000 failures = %v, want the max", got)
	}
}

func TestPenalties(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPenalties(100*time.Millisecond, time.Second, func() time.Time { return now })
	steps := []struct {
		name    string
		advance time.Duration
		fail    string
		ask     string
		want    time.Duration
	}{
		{"unknown source", 0, "", "a", 0},
		{"one failure", 0, "a", "a", 100 * time.Millisecond},
		{"another source unaffected", 0, "", "b", 0},
		{"two", 0, "a", "a", 200 * time.Millisecond},
		{"three", 0, "a", "a", 400 * time.Millisecond},
		{"four", 0, "a", "a", 800 * time.Millisecond},
		{"bounded", 0, "a", "a", time.Second},
		{"still remembered just before the forget time", penaltyForget - time.Nanosecond, "", "a", time.Second},
		{"forgotten after a quiet minute", time.Nanosecond, "", "a", 0},
		{"starts again from the base", 0, "a", "a", 100 * time.Millisecond},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if s.fail != "" {
			p.failed(s.fail)
		}
		if got := p.delay(s.ask); got != s.want {
			t.Fatalf("%s: delay(%s) = %v, want %v", s.name, s.ask, got, s.want)
		}
	}
}

func TestPenaltiesOffAndBounded(t *testing.T) {
	now := time.Unix(0, 0)
	off := newPenalties(-1, time.Second, func() time.Time { return now })
	off.failed("a")
	if d := off.delay("a"); d != 0 {
		t.Fatalf("slowing off: delay %v", d)
	}
	p := newPenalties(time.Millisecond, time.Second, func() time.Time { return now })
	for i := range maxPenaltySources + 100 {
		p.failed(fmt.Sprintf("src-%d", i))
	}
	if n := p.sources(); n > maxPenaltySources {
		t.Fatalf("%d sources remembered, bound %d", n, maxPenaltySources)
	}
}
