package file

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// counters is read by Stats from any goroutine (metrics handlers) while
// the scheduler goroutine updates it, hence atomics.
type counters struct {
	linesRead, bytesRead, events, truncatedLines, invalid   atomic.Int64
	filesOpen, filesTracked, rotations, truncations, errors atomic.Int64
	filtered, lostBytes                                     atomic.Int64
}

// localCounts are counted by the poll without atomics, then published.
type localCounts struct {
	lines, bytes, events, truncated, rotations, truncations, errors, filtered, lostBytes int64
}

// filesEvery bounds how often the poll copies its file list for Files: a
// status request may see it a second late, the read path allocates once
// a second at most.
const filesEvery = time.Second

// Files lists the tracked files, in read order, as of the last copy.
// Safe for concurrent use.
func (in *Input) Files() []input.FileStatus {
	if p := in.rep.filesList.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// publishFiles copies the file list for Files, at most every filesEvery.
// It runs on the goroutine that drives the input, which owns in.ring.
func (in *Input) publishFiles() {
	now := in.now()
	if !in.rep.filesAt.IsZero() && now.Sub(in.rep.filesAt) < filesEvery {
		return
	}
	in.rep.filesAt = now
	list := make([]input.FileStatus, 0, len(in.ring))
	for _, t := range in.ring {
		if t.life.dead() {
			continue
		}
		size := max(t.lastSize, t.readPos)
		list = append(list, input.FileStatus{
			Path: t.path, Identity: t.key, Offset: t.offset, Size: size,
			Lag: max(0, size-t.offset), Open: t.f != nil,
		})
	}
	in.rep.filesList.Store(&list)
}

// Stats returns a snapshot of the counters. Safe for concurrent use.
func (in *Input) Stats() input.Stats {
	c := &in.rep.stats
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
		Filtered:         c.filtered.Load(),
		LostBytes:        c.lostBytes.Load(),
	}
}
