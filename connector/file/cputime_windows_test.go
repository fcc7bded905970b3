package file

import (
	"time"

	"golang.org/x/sys/windows"
)

// cpuTime is the user+system CPU time used by this process so far.
func cpuTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	// Filetime counts 100ns intervals; these are durations, not dates.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}

// peakRSSMB: the peak working set needs psapi, which x/sys does not wrap;
// the benchmark then reports no maxrss figure rather than a wrong one.
func peakRSSMB() (float64, bool) { return 0, false }
