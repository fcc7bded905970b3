package stdin

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what was read from the agent's standard input. Safe for
// concurrent use.
func (in *Input) Describe() component.Description {
	s := &in.stats
	vs := input.Counts{
		LinesRead: s.lines.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(), TruncatedLines: s.truncated.Load(),
	}.Values()
	vs = append(vs, component.Value{Key: "parse_errors", OmitZero: true, N: s.parseErrors.Load(), Metric: "input_parse_errors_total",
		Help: input.HelpParseErrors})
	state := "reading"
	if in.EOF() {
		state = "at end of input"
	}
	return component.Description{Values: vs,
		Summary: fmt.Sprintf("%s, %d lines, %d bytes", state, s.lines.Load(), s.bytes.Load())}
}
