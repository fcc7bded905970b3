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
// value, "off" included) wins. The memory limit is ChooseMemoryLimit's.
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

// DefaultMemoryLimit is the soft limit on the Go runtime's memory the
// agent sets where the operator has set no GOMEMLIMIT: a backstop for the
// 64 MiB of peak RSS the agent is held to, of which ~14 MiB are file
// pages (the binary's text, the WAL's mapped pages) the limit does not
// count. The delivery path's memory is bounded by design (groups, jobs
// and the WAL's caches are bounded in bytes), and with ~300-byte events
// the runtime stays well under it (run-peers peaks of 42-52 MiB RSS, and
// no change in lines/s with it set); but with bigger events a collection
// timed when the live heap was high let the heap grow to 2.2 times that:
// PACKET with 16 KiB events peaked at 61-80 MiB RSS, 56-57 with the
// limit, at the same rate. Should the live heap itself reach the limit,
// the runtime spends at most half the CPU collecting and lets the heap
// grow past it rather than stop.
const DefaultMemoryLimit = 48 << 20

// ChooseMemoryLimit returns the soft memory limit to set at start, or 0
// to leave the runtime as the environment configured it: an operator's
// GOMEMLIMIT (any value, "off" included) wins.
func ChooseMemoryLimit(getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	return DefaultMemoryLimit
}

// TuneMemoryLimit applies ChooseMemoryLimit's decision to the running
// process and returns it, for the start-up log.
func TuneMemoryLimit(getenv func(string) string) int64 {
	l := ChooseMemoryLimit(getenv)
	if l != 0 {
		debug.SetMemoryLimit(l)
	}
	return l
}
