package agent

import (
	"testing"
	"time"
)

// TestHistogramCumulative: Prometheus wants cumulative bucket counts; an
// observation above the last bound counts only in Count and Sum (+Inf).
func TestHistogramCumulative(t *testing.T) {
	var h histogram
	for _, d := range []time.Duration{500 * time.Microsecond, time.Millisecond, 30 * time.Millisecond, time.Minute} {
		h.observe(d)
	}
	s := h.snapshot()
	if s.Count != 4 || s.Sum != 500*time.Microsecond+time.Millisecond+30*time.Millisecond+time.Minute {
		t.Fatalf("count %d sum %s, want 4 and the total", s.Count, s.Sum)
	}
	want := map[time.Duration]uint64{time.Millisecond: 2, 25 * time.Millisecond: 2, 50 * time.Millisecond: 3, 10 * time.Second: 3}
	for i, b := range s.Bounds {
		if w, ok := want[b]; ok && s.Counts[i] != w {
			t.Errorf("bucket <= %s: %d, want %d", b, s.Counts[i], w)
		}
	}
}
