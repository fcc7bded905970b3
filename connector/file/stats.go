package file

import (
	"sync/atomic"

	"github.com/edge-agent/edge-agent/connector/input"
)

// counters is read by Stats from any goroutine (metrics handlers) while
// the scheduler goroutine updates it, hence atomics.
type counters struct {
	linesRead, bytesRead, events, truncatedLines, invalid   atomic.Int64
	filesOpen, filesTracked, rotations, truncations, errors atomic.Int64
}

// Stats returns a snapshot of the counters. Safe for concurrent use.
func (in *Input) Stats() input.Stats {
	c := &in.stats
	return input.Stats{
		LinesRead:        c.linesRead.Load(),
		BytesRead:        c.bytesRead.Load(),
		Events:           c.events.Load(),
		TruncatedLines:   c.truncatedLines.Load(),
		InvalidSequences: c.invalid.Load(),
		FilesOpen:        c.filesOpen.Load(),
		FilesTracked:     c.filesTracked.Load(),
		Rotations:        c.rotations.Load(),
		Truncations:      c.truncations.Load(),
		Errors:           c.errors.Load(),
	}
}
