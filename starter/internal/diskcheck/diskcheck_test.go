package diskcheck

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// Measure takes its samples in a file of its own beside the WAL and
// leaves nothing behind; at least one sample whatever the budget.
func TestMeasureLeavesNothingBehind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		budget time.Duration
		min    int
	}{
		{name: "all samples", n: 5, budget: time.Hour, min: 5},
		{name: "budget spent: one sample", n: 5, budget: 0, min: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res, err := Measure(context.Background(), dir, tc.n, tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Samples) < tc.min || len(res.Samples) > tc.n {
				t.Fatalf("%d samples, want %d..%d", len(res.Samples), tc.min, tc.n)
			}
			for i, s := range res.Samples {
				if s <= 0 {
					t.Fatalf("sample %d = %v, want > 0", i, s)
				}
			}
			left, err := os.ReadDir(dir)
			if err != nil || len(left) != 0 {
				t.Fatalf("queue directory holds %v after the check (err %v), want nothing", left, err)
			}
		})
	}
}

// A directory that cannot be written is named in the error, with what to
// check.
func TestMeasureNamesAMissingDirectory(t *testing.T) {
	_, err := Measure(context.Background(), "/nonexistent/edge-agent-queue", 3, time.Second)
	if err == nil {
		t.Fatal("Measure in a missing directory succeeded")
	}
	want := "queue directory /nonexistent/edge-agent-queue"
	if got := err.Error(); !strings.Contains(got, want) {
		t.Fatalf("error %q does not name %q", got, want)
	}
}

func TestQuantiles(t *testing.T) {
	ms := time.Millisecond
	r := Result{Samples: []time.Duration{9 * ms, 1 * ms, 5 * ms, 3 * ms, 7 * ms}}
	if r.Median() != 5*ms || r.Max() != 9*ms || r.P90() != 9*ms {
		t.Fatalf("median %v, p90 %v, max %v of 1,3,5,7,9 ms", r.Median(), r.P90(), r.Max())
	}
	if (Result{}).Median() != 0 {
		t.Fatal("median of no samples is not 0")
	}
}

// The throughput and wear figures follow the model: two fdatasyncs per
// commit; at low rates one commit per commit-interval, whose pages
// dominate what is written; the disk bounds the commits per hour.
func TestEstimates(t *testing.T) {
	s := Settings{CommitInterval: 4 * time.Second, BulkMaxSize: 256, FastGroup: 4096, GroupMaxBytes: 4 << 20, LineBytes: 200}
	ms := time.Millisecond
	if got := MaxRate(10*ms, 4096); math.Abs(got-204_800) > 1 {
		t.Fatalf("MaxRate(10ms, 4096) = %.0f, want 204800 (4096 lines per 20 ms commit)", got)
	}
	if g := s.GrownGroup(); g != 20971 {
		t.Fatalf("GrownGroup = %d, want 4 MiB / 200 B = 20971", g)
	}
	for _, tc := range []struct {
		sync         time.Duration
		rate         float64
		commitsHour  float64
		perInputByte [2]float64
	}{
		{sync: 3 * ms, rate: 1, commitsHour: 900, perInputByte: [2]float64{25, 35}},
		{sync: 3 * ms, rate: 10, commitsHour: 900, perInputByte: [2]float64{3, 5}},
		{sync: 3 * ms, rate: 1000, commitsHour: 1000 * 3600 / 256, perInputByte: [2]float64{1, 1.3}},
		// 30 ms: at most one commit per 60 ms.
		{sync: 30 * ms, rate: 10_000, commitsHour: 3600 / 0.06, perInputByte: [2]float64{0.8, 1}},
	} {
		w := s.WearAt(tc.sync, tc.rate)
		if math.Abs(w.CommitsPerHour-tc.commitsHour) > 1 || w.SyncsPerHour != 2*w.CommitsPerHour {
			t.Errorf("%v lines/s at %v: %.0f commits/h, %.0f fsyncs/h; want %.0f and twice that", tc.rate, tc.sync, w.CommitsPerHour, w.SyncsPerHour, tc.commitsHour)
		}
		if w.PerInputByte < tc.perInputByte[0] || w.PerInputByte > tc.perInputByte[1] {
			t.Errorf("%v lines/s at %v: %.2f bytes written per input byte, want %.2f..%.2f", tc.rate, tc.sync, w.PerInputByte, tc.perInputByte[0], tc.perInputByte[1])
		}
	}
}
