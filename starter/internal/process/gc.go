package process

import (
	"runtime/debug"
)

// DefaultGCPercent is the agent's GOGC where the operator has set none.
// The live heap of the delivery path is a few MiB while it allocates
// each event's payload afresh (the input hands payloads over for good),
// so the runtime's default of 100 collects very often for little memory:
// about a sixth of the agent's CPU per line went to marking. 200 gave
// back most of that for a heap at most 3x the live one instead of 2x.
// 400 saved a little more CPU but peaked above 64 MiB RSS without
// fsync, and a soft memory limit to bound it cost back what 400 saved
// (the runtime collected near the limit) and would thrash whenever the
// live heap reached it. Once the agent handed the sender two groups'
// worth of jobs (agent.maxJobs), the claims came from the WAL's cache
// and RAW took 2.4 CPU-s per 1M lines, but PACKET, whose jobs also hold
// their encoded payloads, peaked at 67-68 MiB at 200, 58-61 at 150 (a
// few MiB more under load) and 55-56 at 120, for 0.3 CPU-s more per 1M
// RAW lines than at 200 (run-peers, quiet machine). docs/performance.md
// has the figures.
const DefaultGCPercent = 120

// ChooseGC returns the GC percentage to set at start, or 0 to leave the
// runtime as the environment configured it: an operator's GOGC (any
// value, "off" included) wins. GOMEMLIMIT is left to the operator and
// bounds the heap under either percentage.
func ChooseGC(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		return 0
	}
	return DefaultGCPercent
}

// TuneGC applies ChooseGC's decision to the running process and returns
// it, for the start-up log.
func TuneGC(getenv func(string) string) int {
	p := ChooseGC(getenv)
	if p != 0 {
		debug.SetGCPercent(p)
	}
	return p
}
