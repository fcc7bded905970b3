package backoff

import (
	"context"
	"errors"
	"math"
	"math/big"
	"testing"
	"testing/synctest"
	"time"
)

// want is the reference: min(ceiling, first·2^n) in exact arithmetic.
func want(first, ceiling time.Duration, n int) time.Duration {
	v := new(big.Int).Lsh(big.NewInt(int64(first)), uint(max(n, 0)))
	if v.Cmp(big.NewInt(int64(ceiling))) > 0 {
		return ceiling
	}
	return time.Duration(v.Int64())
}

func TestDelayDoublesUpToMax(t *testing.T) {
	for _, p := range []Policy{
		{Initial: 5 * time.Millisecond, Max: 40 * time.Millisecond},
		{Initial: 100 * time.Millisecond, Max: 30 * time.Second},
		{Initial: 250 * time.Millisecond, Max: 300 * time.Second},
		{Initial: 50 * time.Microsecond, Max: 5 * time.Millisecond},
		{Initial: 3 * time.Second, Max: 10 * time.Second}, // Max not a power-of-two multiple
		{Initial: time.Second, Max: time.Second},
		{Initial: 1, Max: math.MaxInt64},
		{Initial: 3, Max: math.MaxInt64},
		{Initial: 1 << 62, Max: math.MaxInt64},
		{Initial: math.MaxInt64, Max: math.MaxInt64},
	} {
		for n := 0; n <= 70; n++ {
			if got, w := p.Delay(n), want(p.Initial, p.Max, n); got != w {
				t.Fatalf("%+v.Delay(%d) = %d, want %d", p, n, got, w)
			}
		}
	}
}

func TestDelayExactValues(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name string
		p    Policy
		n    int
		want time.Duration
	}{
		{"first", Policy{Initial: 5 * ms, Max: 40 * ms}, 0, 5 * ms},
		{"doubled twice", Policy{Initial: 5 * ms, Max: 40 * ms}, 2, 20 * ms},
		{"reaches max", Policy{Initial: 5 * ms, Max: 40 * ms}, 3, 40 * ms},
		{"stays at max", Policy{Initial: 5 * ms, Max: 40 * ms}, 70, 40 * ms},
		{"capped below the next doubling", Policy{Initial: 3 * time.Second, Max: 10 * time.Second}, 2, 10 * time.Second},
		{"negative n is the first attempt", Policy{Initial: 5 * ms, Max: 40 * ms}, -3, 5 * ms},
		{"most negative n", Policy{Initial: 5 * ms, Max: 40 * ms}, math.MinInt, 5 * ms},
		{"largest n", Policy{Initial: 5 * ms, Max: 40 * ms}, math.MaxInt, 40 * ms},
		{"last shift that fits", Policy{Initial: 1, Max: math.MaxInt64}, 62, 1 << 62},
		{"first shift past int64", Policy{Initial: 1, Max: math.MaxInt64}, 63, math.MaxInt64},
		{"overflowing shift saturates", Policy{Initial: 3, Max: math.MaxInt64}, 62, math.MaxInt64},
		{"huge initial saturates", Policy{Initial: 1 << 62, Max: math.MaxInt64}, 1, math.MaxInt64},
		{"max below initial: max wins", Policy{Initial: time.Second, Max: 100 * ms}, 0, 100 * ms},
		{"max below initial, later attempt", Policy{Initial: time.Second, Max: 100 * ms}, 9, 100 * ms},
		{"zero initial starts at max", Policy{Initial: 0, Max: 5 * time.Second}, 0, 5 * time.Second},
		{"negative initial starts at max", Policy{Initial: -time.Second, Max: 5 * time.Second}, 4, 5 * time.Second},
		{"zero max caps at initial", Policy{Initial: 7 * ms, Max: 0}, 10, 7 * ms},
		{"negative max caps at initial", Policy{Initial: 7 * ms, Max: -1}, 0, 7 * ms},
		{"zero policy waits a nanosecond", Policy{}, 5, 1},
		{"both negative wait a nanosecond", Policy{Initial: -5, Max: -9}, 0, 1},
	} {
		if got := tt.p.Delay(tt.n); got != tt.want {
			t.Errorf("%s: Delay(%d) = %v, want %v", tt.name, tt.n, got, tt.want)
		}
	}
}

// fixed returns a Rand that always answers v and records what it was
// asked for.
func fixed(v int64, asked *int64) func(int64) int64 {
	return func(n int64) int64 {
		*asked = n
		return v
	}
}

func TestJitteredShortensByUpToHalf(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name      string
		p         Policy
		n         int
		r         int64
		wantAsked int64
		want      time.Duration
	}{
		{"no shortening", Policy{Initial: 5 * ms, Max: 40 * ms}, 1, 0, int64(5*ms) + 1, 10 * ms},
		{"largest shortening", Policy{Initial: 5 * ms, Max: 40 * ms}, 1, int64(5 * ms), int64(5*ms) + 1, 5 * ms},
		{"in between", Policy{Initial: 5 * ms, Max: 40 * ms}, 3, int64(ms), int64(20*ms) + 1, 39 * ms},
		{"at max, never above it", Policy{Initial: 5 * ms, Max: 40 * ms}, 70, 0, int64(20*ms) + 1, 40 * ms},
		{"odd delay keeps the larger half", Policy{Initial: 3, Max: 3}, 0, 1, 2, 2},
		{"one nanosecond stays positive", Policy{}, 0, 0, 1, 1},
		{"saturated delay", Policy{Initial: 1, Max: math.MaxInt64}, 64, math.MaxInt64 / 2, math.MaxInt64/2 + 1, math.MaxInt64 - math.MaxInt64/2},
		{"negative draw is clamped to no shortening", Policy{Initial: 8, Max: 8}, 0, -3, 5, 8},
		{"draw past the range is clamped to half", Policy{Initial: 8, Max: 8}, 0, 1 << 40, 5, 4},
	} {
		var asked int64
		tt.p.Rand = fixed(tt.r, &asked)
		if got := tt.p.Jittered(tt.n); got != tt.want || asked != tt.wantAsked {
			t.Errorf("%s: Jittered(%d) = %v asking Rand(%d), want %v asking Rand(%d)",
				tt.name, tt.n, got, asked, tt.want, tt.wantAsked)
		}
	}
}

// The default source must spread agents: draws stay within the rule and do
// not all land on one value. 200 identical draws from a 5,000,001-value
// range have a chance below 1e-1300; this cannot flake.
func TestJitteredDefaultSourceSpreads(t *testing.T) {
	p := Policy{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := p.Jittered(0)
		if d < 5*time.Millisecond || d > 10*time.Millisecond {
			t.Fatalf("Jittered(0) = %v, want within [5ms, 10ms]", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Fatalf("200 jittered delays were all %v: no spread", p.Jittered(0))
	}
}

func TestSleepWaitsTheWholeDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), 3*time.Second); err != nil {
			t.Fatalf("Sleep = %v, want nil", err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("Sleep(3s) returned after %v", got)
		}
	})
}

func TestSleepStopsWhenTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("Sleep returned %v after the start, want at the cancel (1s)", got)
		}
	})
}

func TestSleepNonPositive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		for _, d := range []time.Duration{0, -time.Second} {
			if err := Sleep(t.Context(), d); err != nil {
				t.Fatalf("Sleep(%v) = %v, want nil", d, err)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep(0) on a done context = %v, want context.Canceled", err)
		}
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep(1h) on a done context = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 0 {
			t.Fatalf("non-positive or cancelled sleeps took %v", got)
		}
	})
}

func FuzzPolicy(f *testing.F) {
	f.Add(int64(100*time.Millisecond), int64(30*time.Second), 3, int64(7))
	f.Add(int64(0), int64(0), 0, int64(0))
	f.Add(int64(-1), int64(5), 70, int64(-1))
	f.Add(int64(1), int64(math.MaxInt64), 62, int64(math.MaxInt64))
	f.Add(int64(time.Second), int64(time.Millisecond), 1, int64(1<<40))
	f.Add(int64(math.MinInt64), int64(math.MinInt64), math.MinInt, int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, initial, maxWait int64, n int, r int64) {
		p := Policy{Initial: time.Duration(initial), Max: time.Duration(maxWait), Rand: func(int64) int64 { return r }}
		d := p.Delay(n)
		if d <= 0 {
			t.Fatalf("%+v.Delay(%d) = %v, want > 0", p, n, d)
		}
		if p.Max > 0 && d > p.Max {
			t.Fatalf("%+v.Delay(%d) = %v, above Max", p, n, d)
		}
		if n < math.MaxInt {
			if next := p.Delay(n + 1); next < d {
				t.Fatalf("%+v: Delay(%d) = %v < Delay(%d) = %v", p, n+1, next, n, d)
			}
		}
		if p.Initial > 0 && p.Max >= p.Initial {
			if w := want(p.Initial, p.Max, n); d != w {
				t.Fatalf("%+v.Delay(%d) = %v, want %v", p, n, d, w)
			}
		}
		if j := p.Jittered(n); j <= 0 || j > d || j < d-d/2 {
			t.Fatalf("%+v.Jittered(%d) = %v, want within [%v, %v]", p, n, j, d-d/2, d)
		}
	})
}
