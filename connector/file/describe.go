package file

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what the input read and which files it tracks: the
// figures every input reports, then the file ones. Safe for concurrent use.
func (in *Input) Describe() component.Description {
	s := in.Stats()
	vs := input.Counts{
		LinesRead: s.LinesRead, BytesRead: s.BytesRead, Events: s.Events, TruncatedLines: s.TruncatedLines,
		Errors: s.Errors, Filtered: s.Filtered,
	}.Values()
	vs = append(vs,
		component.Value{Key: "files_open", N: s.FilesOpen, Kind: component.Gauge, Metric: "files_open", Total: true,
			Help: "File descriptors the input holds open."},
		component.Value{Key: "files_tracked", N: s.FilesTracked, Kind: component.Gauge},
		component.Value{Key: "rotations", N: s.Rotations},
		component.Value{Key: "truncations", N: s.Truncations},
		component.Value{N: s.LostBytes, Metric: "unread_bytes_lost_total", Total: true,
			Help: "Bytes known written to files that went away before they were read."},
	)
	files := in.Files()
	if files == nil {
		// It reads files, none now.
		files = []input.FileStatus{}
	}
	return component.Description{
		Values:  vs,
		Summary: fmt.Sprintf("%d files tracked, %d open, %d events, %d filtered", s.FilesTracked, s.FilesOpen, s.Events, s.Filtered),
		Files:   files,
	}
}
