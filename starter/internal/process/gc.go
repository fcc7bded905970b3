package process

import (
	"runtime/debug"
)

// The agent's garbage-collector defaults, used only where the operator
// has not set GOGC (and GOMEMLIMIT). The live heap of the delivery path
// is a few MiB (read buffers, the jobs in flight, the WAL's block
// cache), so the runtime's default GOGC=100 collects very often for
// little memory: at 1,000,000 lines it spent about a sixth of the
// agent's CPU marking. A higher percentage collects less often; the soft
// memory limit keeps the heap from growing with it when the live heap
// is larger (a big job of PACKET payloads), since the runtime collects
// sooner as the heap nears it. docs/performance.md has the figures.
const (
	DefaultGCPercent = 400
	// DefaultMemoryLimit is soft: above it the runtime collects more
	// often, it never refuses memory, and it does not count the WAL's
	// file-backed mapped pages.
	DefaultMemoryLimit = 48 << 20
)

// GCPolicy is what TuneGC applies; a zero field leaves that setting to
// the runtime (its own default, or the operator's environment).
type GCPolicy struct {
	Percent     int   // for debug.SetGCPercent; 0: not set
	MemoryLimit int64 // bytes, for debug.SetMemoryLimit; 0: not set
}

// ChooseGC decides the GC settings from the environment: the agent's
// defaults go in only where the operator said nothing. An operator's
// GOGC turns both defaults off, since the soft limit only exists to bound
// the agent's own percentage; an operator's GOMEMLIMIT replaces the
// agent's limit, the percentage still applying under it.
func ChooseGC(getenv func(string) string) GCPolicy {
	if getenv("GOGC") != "" {
		return GCPolicy{}
	}
	p := GCPolicy{Percent: DefaultGCPercent}
	if getenv("GOMEMLIMIT") == "" {
		p.MemoryLimit = DefaultMemoryLimit
	}
	return p
}

// TuneGC applies ChooseGC's decision to the running process and returns
// it, for the start-up log.
func TuneGC(getenv func(string) string) GCPolicy {
	p := ChooseGC(getenv)
	if p.Percent != 0 {
		debug.SetGCPercent(p.Percent)
	}
	if p.MemoryLimit != 0 {
		debug.SetMemoryLimit(p.MemoryLimit)
	}
	return p
}
