package process

import (
	"runtime/debug"
	"testing"
)

// TestChooseGC: the agent's GC percentage applies only where the
// operator's environment sets no GOGC.
func TestChooseGC(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{"nothing set", nil, DefaultGCPercent},
		{"GOGC set", map[string]string{"GOGC": "100"}, 0},
		{"GOGC off", map[string]string{"GOGC": "off"}, 0},
		{"GOMEMLIMIT alone", map[string]string{"GOMEMLIMIT": "200MiB"}, DefaultGCPercent},
		{"both set", map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, 0},
		{"empty GOGC is unset", map[string]string{"GOGC": ""}, DefaultGCPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChooseGC(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Fatalf("ChooseGC(%v) = %d, want %d", tc.env, got, tc.want)
			}
		})
	}
}

// TestTuneGCApplies: the decision reaches the runtime, and an operator's
// GOGC leaves the runtime's percentage alone.
func TestTuneGCApplies(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })

	if got := TuneGC(func(string) string { return "" }); got != DefaultGCPercent {
		t.Errorf("TuneGC = %d, want %d", got, DefaultGCPercent)
	}
	if got := debug.SetGCPercent(37); got != DefaultGCPercent {
		t.Errorf("GC percent after TuneGC = %d, want %d", got, DefaultGCPercent)
	}
	TuneGC(func(k string) string {
		if k == "GOGC" {
			return "37"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 37 {
		t.Errorf("GC percent after TuneGC with GOGC set = %d, want the operator's 37 untouched", got)
	}
}
