package process

import (
	"runtime"
	"strings"
)

// HeapSampling reports whether the runtime should keep sampling
// allocations for the heap profile. Only /debug/pprof/ (http.pprof) ever
// reads that profile, yet by default the runtime samples every 512 KiB
// allocated, with a stack walk each time, and the agent allocates large
// buffers (input arenas, decoded blocks) by the hundred per second: a
// measurable share of its CPU for a profile nobody could fetch. An
// operator's GODEBUG memprofilerate wins, as GOGC does over TuneGC.
func HeapSampling(pprof bool, getenv func(string) string) bool {
	if pprof {
		return true
	}
	for _, kv := range strings.Split(getenv("GODEBUG"), ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "memprofilerate=") {
			return true
		}
	}
	return false
}

// TuneHeapSampling applies HeapSampling's decision: it turns the
// sampling off, or leaves the runtime's rate as it is. http.pprof is
// applied at start only (a change waits for a restart), so the profile
// never sees a rate that changed under it.
func TuneHeapSampling(pprof bool, getenv func(string) string) bool {
	on := HeapSampling(pprof, getenv)
	if !on {
		runtime.MemProfileRate = 0
	}
	return on
}
