package mqtt

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what the subscriber took (LinesRead are messages), the
// acknowledgements it sent after commits and its sessions. Safe for
// concurrent use.
func (in *Input) Describe() component.Description {
	s := &in.stats
	connects := s.connects.Load()
	vs := input.Counts{
		LinesRead: s.messages.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(),
		Errors: s.errors.Load(), Restarts: max(connects-1, 0),
	}.Values()
	vs = append(vs,
		component.Value{Key: "acked", N: s.acked.Load()},
		component.Value{Key: "queue_full_waits", OmitZero: true, N: s.waits.Load()},
		component.Value{Key: "parse_errors", OmitZero: true, N: s.parseErrors.Load(), Metric: "input_parse_errors_total",
			Help: input.HelpParseErrors},
		component.Value{Key: "connected", N: s.connected.Load(), Kind: component.Gauge},
		component.Value{Key: "sessions", N: connects},
	)
	state := "disconnected"
	if s.connected.Load() > 0 {
		state = "connected"
	}
	return component.Description{Values: vs,
		Summary: fmt.Sprintf("%s (%d sessions), %d messages, %d acknowledged after commit, %d bytes",
			state, connects, s.messages.Load(), s.acked.Load(), s.bytes.Load())}
}
