package execin

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what the command printed, how often it ran and how the
// last run ended (Restarts: runs after the first; Errors: start failures
// and non-zero exits). Safe for concurrent use.
func (in *Input) Describe() component.Description {
	s := &in.stats
	runs := s.runs.Load()
	vs := input.Counts{
		LinesRead: s.lines.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(), TruncatedLines: s.truncated.Load(),
		Errors: s.failures.Load(), Restarts: max(runs-1, 0),
	}.Values()
	vs = append(vs,
		component.Value{Key: "runs", N: runs},
		component.Value{Key: "stderr_lines", OmitZero: true, N: s.stderrLines.Load()},
		component.Value{Key: "parse_errors", OmitZero: true, N: s.parseErrors.Load(), Metric: "input_parse_errors_total",
			Help: input.HelpParseErrors},
	)
	state := "not running"
	if s.running.Load() {
		state = "running"
	}
	last := "none yet"
	if e := s.lastExit.Load(); e >= 0 {
		last = fmt.Sprint(e)
	} else if runs > 0 {
		last = "killed"
	}
	return component.Description{Values: vs,
		Summary: fmt.Sprintf("%s, %d runs (%d failed, last exit %s), %d lines, %d stderr lines",
			state, runs, s.failures.Load(), last, s.lines.Load(), s.stderrLines.Load())}
}
