package process

import (
	"runtime/debug"
)

// DefaultGCPercent is the agent's GOGC where the operator has set none:
// the highest percentage that kept PACKET's peak RSS under 64 MiB
// (docs/performance-history.md, "The garbage collector's defaults").
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
// agent sets where the operator has set no GOMEMLIMIT: a backstop under
// the 64 MiB of peak RSS the agent is held to, leaving room for the file
// pages (the binary's text, the WAL's mapped pages) it does not count.
// The delivery path's memory is bounded by design; the limit catches a
// heap grown by a badly timed collection with big events. Should the live
// heap itself reach it, the runtime spends at most half the CPU
// collecting and lets the heap grow past it rather than stop.
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
