package process

import (
	"runtime/debug"
	"testing"
)

// TestChooseGC: the agent's GC defaults apply only where the operator's
// environment is silent.
func TestChooseGC(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want GCPolicy
	}{
		{"nothing set", nil, GCPolicy{Percent: DefaultGCPercent, MemoryLimit: DefaultMemoryLimit}},
		{"GOGC set", map[string]string{"GOGC": "100"}, GCPolicy{}},
		{"GOGC off", map[string]string{"GOGC": "off"}, GCPolicy{}},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "200MiB"}, GCPolicy{Percent: DefaultGCPercent}},
		{"both set", map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, GCPolicy{}},
		{"empty values are unset", map[string]string{"GOGC": "", "GOMEMLIMIT": ""}, GCPolicy{Percent: DefaultGCPercent, MemoryLimit: DefaultMemoryLimit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ChooseGC(func(k string) string { return tc.env[k] })
			if got != tc.want {
				t.Fatalf("ChooseGC(%v) = %+v, want %+v", tc.env, got, tc.want)
			}
		})
	}
}

// TestTuneGCApplies: the decision reaches the runtime, and a setting left
// to the operator is not touched.
func TestTuneGCApplies(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})
	const operatorLimit = 1 << 40
	debug.SetMemoryLimit(operatorLimit)

	TuneGC(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1TiB"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("GC percent after TuneGC = %d, want %d", got, DefaultGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != operatorLimit {
		t.Errorf("memory limit after TuneGC = %d, want the operator's %d", got, operatorLimit)
	}

	TuneGC(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != DefaultMemoryLimit {
		t.Errorf("memory limit after TuneGC = %d, want %d", got, DefaultMemoryLimit)
	}
}
