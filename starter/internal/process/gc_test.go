package process

import (
	"runtime"
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

// TestChooseMemoryLimit: the agent's soft memory limit applies only where
// the operator's environment sets no GOMEMLIMIT, whatever GOGC says.
func TestChooseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int64
	}{
		{"nothing set", nil, DefaultMemoryLimit},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "200MiB"}, 0},
		{"GOMEMLIMIT off", map[string]string{"GOMEMLIMIT": "off"}, 0},
		{"GOGC alone", map[string]string{"GOGC": "100"}, DefaultMemoryLimit},
		{"empty GOMEMLIMIT is unset", map[string]string{"GOMEMLIMIT": ""}, DefaultMemoryLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChooseMemoryLimit(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Fatalf("ChooseMemoryLimit(%v) = %d, want %d", tc.env, got, tc.want)
			}
		})
	}
}

// TestTuneMemoryLimitApplies: the decision reaches the runtime, and an
// operator's GOMEMLIMIT leaves the runtime's limit alone.
func TestTuneMemoryLimitApplies(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	const operators = 200 << 20
	debug.SetMemoryLimit(operators)
	TuneMemoryLimit(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "200MiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != operators {
		t.Errorf("memory limit after TuneMemoryLimit with GOMEMLIMIT set = %d, want the operator's %d untouched", got, operators)
	}
	if got := TuneMemoryLimit(func(string) string { return "" }); got != DefaultMemoryLimit {
		t.Errorf("TuneMemoryLimit = %d, want %d", got, DefaultMemoryLimit)
	}
	if got := debug.SetMemoryLimit(-1); got != DefaultMemoryLimit {
		t.Errorf("memory limit after TuneMemoryLimit = %d, want %d", got, DefaultMemoryLimit)
	}
}

// TestHeapSampling: allocations are sampled only for a heap profile
// someone can fetch (http.pprof), or where the operator asked for a rate.
func TestHeapSampling(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pprof   bool
		godebug string
		want    bool
	}{
		{"pprof off", false, "", false},
		{"pprof on", true, "", true},
		{"operator's rate", false, "memprofilerate=1", true},
		{"operator's rate among others", false, "gctrace=1, memprofilerate=4096", true},
		{"other GODEBUG settings", false, "gctrace=1,madvdontneed=1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "GODEBUG" {
					return tc.godebug
				}
				return ""
			}
			if got := HeapSampling(tc.pprof, getenv); got != tc.want {
				t.Fatalf("HeapSampling(%v, GODEBUG=%q) = %v, want %v", tc.pprof, tc.godebug, got, tc.want)
			}
		})
	}
}

// TestTuneHeapSamplingApplies: the decision reaches the runtime.
func TestTuneHeapSamplingApplies(t *testing.T) {
	old := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = old })
	none := func(string) string { return "" }

	runtime.MemProfileRate = 512 << 10
	TuneHeapSampling(true, none)
	if runtime.MemProfileRate != 512<<10 {
		t.Errorf("with http.pprof: MemProfileRate = %d, want it left at %d", runtime.MemProfileRate, 512<<10)
	}
	TuneHeapSampling(false, none)
	if runtime.MemProfileRate != 0 {
		t.Errorf("without http.pprof: MemProfileRate = %d, want 0", runtime.MemProfileRate)
	}
}

// TestRaiseMemoryLimitForRelay: a relay input raises the agent's own soft
// limit to RelayMemoryLimit; an operator's GOMEMLIMIT (set 0) and an agent
// without a relay input keep theirs.
func TestRaiseMemoryLimitForRelay(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	for _, tc := range []struct {
		name    string
		set     int64
		relay   bool
		want    int64
		runtime int64
	}{
		{"relay, agent's limit", DefaultMemoryLimit, true, RelayMemoryLimit, RelayMemoryLimit},
		{"no relay", DefaultMemoryLimit, false, DefaultMemoryLimit, DefaultMemoryLimit},
		{"relay, GOMEMLIMIT decided", 0, true, 0, DefaultMemoryLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(DefaultMemoryLimit)
			if got := RaiseMemoryLimitForRelay(tc.set, tc.relay); got != tc.want {
				t.Fatalf("RaiseMemoryLimitForRelay(%d, %v) = %d, want %d", tc.set, tc.relay, got, tc.want)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.runtime {
				t.Fatalf("runtime limit %d, want %d", got, tc.runtime)
			}
		})
	}
}
