package figures

import "testing"

func TestMedianAndSpread(t *testing.T) {
	for _, tt := range []struct {
		xs     []float64
		median float64
		spread string
	}{
		{nil, 0, "NA"},
		{[]float64{3}, 3, "3.0 (3.0..3.0)"},
		{[]float64{5, 1, 3}, 3, "3.0 (1.0..5.0)"},
		{[]float64{4, 1, 2, 10}, 3, "3.0 (1.0..10.0)"},
	} {
		if got := Median(tt.xs); got != tt.median {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.median)
		}
		if got := Spread(tt.xs, 1); got != tt.spread {
			t.Errorf("Spread(%v) = %q, want %q", tt.xs, got, tt.spread)
		}
	}
	xs := []float64{2, 1}
	Median(xs)
	if xs[0] != 2 {
		t.Fatal("Median sorted its argument")
	}
}

func TestColumn(t *testing.T) {
	type run struct {
		ok bool
		v  float64
	}
	got := Column([]run{{true, 1}, {false, 2}, {true, -1}, {true, 4}}, func(r run) bool { return r.ok }, func(r run) float64 { return r.v })
	if len(got) != 2 || got[0] != 1 || got[1] != 4 {
		t.Fatalf("Column = %v, want [1 4]: failed runs and unknown figures left out", got)
	}
}
