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

// RelayMemoryLimit replaces DefaultMemoryLimit in an agent whose config
// has a relay input (type edgesocket). A relay's live memory grows with
// its connections (a goroutine stack, a read buffer and a reply ring
// each) and with the batches it holds between a collector and the queue:
// with a thousand connections it comes near DefaultMemoryLimit, where the
// runtime would collect almost without pause (docs/performance-history.md,
// "The agent's memory limits"). The trade-off: a relay's peak RSS may
// reach about this limit plus the file pages, against 64 MiB for an agent
// that tails files.
const RelayMemoryLimit = 80 << 20

// ChooseMemoryLimit returns the soft memory limit to set at start, or 0
// to leave the runtime as the environment configured it: an operator's
// GOMEMLIMIT (any value, "off" included) wins.
func ChooseMemoryLimit(getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	return DefaultMemoryLimit
}

// RaiseMemoryLimitForRelay sets RelayMemoryLimit once the config is known
// to hold a relay input, if the limit in force is the agent's own (set is
// what TuneMemoryLimit returned: 0 when GOMEMLIMIT decided). It returns
// the limit now in force by the agent's choice, 0 if the environment's.
func RaiseMemoryLimitForRelay(set int64, relay bool) int64 {
	if set == 0 || !relay || set >= RelayMemoryLimit {
		return set
	}
	debug.SetMemoryLimit(RelayMemoryLimit)
	return RelayMemoryLimit
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
