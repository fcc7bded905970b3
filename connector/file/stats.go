package file

import "sync/atomic"

// Stats are the file input's counters since Create. Every field is
// monotonic except FilesOpen and FilesTracked, which are gauges.
type Stats struct {
	LinesRead        int64 // complete lines read (before multiline grouping)
	BytesRead        int64 // raw bytes read from files
	Events           int64 // data events produced (lines or groups)
	TruncatedLines   int64 // lines cut to max-line-bytes
	InvalidSequences int64 // invalid byte sequences replaced by U+FFFD
	FilesOpen        int64 // open descriptors now
	FilesTracked     int64 // files with a position now
	Rotations        int64 // a path that now names a different file
	Truncations      int64 // files that shrank or were rewritten (restart at 0)
	Errors           int64 // file errors skipped (on-error: skip) or returned
}

// counters is read by Stats from any goroutine (metrics handlers) while
// the scheduler goroutine updates it, hence atomics.
type counters struct {
	linesRead, bytesRead, events, truncatedLines, invalid   atomic.Int64
	filesOpen, filesTracked, rotations, truncations, errors atomic.Int64
}

// Stats returns a snapshot of the counters. Safe for concurrent use.
func (in *Input) Stats() Stats {
	c := &in.stats
	return Stats{
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
