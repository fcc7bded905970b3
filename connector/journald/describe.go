package journald

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what the input read (LinesRead are journal entries), its
// journalctl restarts and its cursor. Safe for concurrent use.
func (in *Input) Describe() component.Description {
	s := in.Stats()
	cursor := in.Cursor()
	shown := cursor
	if shown == "" {
		shown = "-"
	}
	return component.Description{
		Values: input.Counts{
			LinesRead: s.LinesRead, BytesRead: s.BytesRead, Events: s.Events, TruncatedLines: s.TruncatedLines,
			Errors: s.Errors, Filtered: s.Filtered, Restarts: s.Restarts,
		}.Values(),
		// The journal cursor of the last entry handed over.
		Texts:   []component.Text{{Key: "cursor", Value: cursor}},
		Summary: fmt.Sprintf("%d entries, %d bytes, %d events, %d restarts, cursor %s", s.LinesRead, s.BytesRead, s.Events, s.Restarts, shown),
	}
}
