package daemon

import (
	"log/slog"

	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

// relayInputType is the input type that makes the agent a relay.
const relayInputType = "edgesocket"

// hasRelayInput reports whether cfg makes the agent a relay, which takes
// process.RelayMemoryLimit as its default soft memory limit.
func hasRelayInput(cfg *config.Config) bool {
	for _, e := range cfg.Inputs {
		if e.Type == relayInputType {
			return true
		}
	}
	return false
}

// tuning is what tuneProcess set, for the log once it is open.
type tuning struct {
	fdSoft, fdHard uint64
	fdErr          error
	gcPercent      int
	memLimit       int64
}

// tuneProcess raises the open-files limit before anything opens a file
// (the input sizes max-open-files from the limit in force when it is
// created), and sets the GC percentage and soft memory limit before the
// agent allocates much, unless the environment sets GOGC or GOMEMLIMIT.
func tuneProcess(getenv func(string) string) tuning {
	var t tuning
	t.fdSoft, t.fdHard, t.fdErr = process.RaiseOpenFilesLimit()
	t.gcPercent = process.TuneGC(getenv)
	t.memLimit = process.TuneMemoryLimit(getenv)
	return t
}

// log records the tuning, and turns heap profile sampling off unless
// pprof is served.
func (t tuning) log(logger *slog.Logger, pprof bool, getenv func(string) string) {
	if t.fdErr != nil {
		logger.Warn("open-files limit left as it was", "error", t.fdErr, "soft", t.fdSoft, "hard", t.fdHard)
	} else if t.fdSoft > 0 {
		logger.Debug("open-files limit", "soft", t.fdSoft, "hard", t.fdHard)
	}
	if t.gcPercent != 0 {
		logger.Debug("garbage collector percentage set (GOGC in the environment overrides it)", "gc_percent", t.gcPercent)
	} else {
		logger.Debug("garbage collector percentage left to GOGC")
	}
	if t.memLimit != 0 {
		logger.Debug("soft memory limit set (GOMEMLIMIT in the environment overrides it)", "memory_limit_bytes", t.memLimit)
	} else {
		logger.Debug("soft memory limit left to GOMEMLIMIT")
	}
	if !process.TuneHeapSampling(pprof, getenv) {
		logger.Debug("heap profile sampling off (http.pprof is off, and GODEBUG sets no memprofilerate)")
	}
}
