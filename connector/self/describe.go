package self

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what the input took from the agent's log. Safe for
// concurrent use.
func (in *Input) Describe() component.Description {
	s := in.Stats()
	vs := input.Counts{LinesRead: s.LinesRead, BytesRead: s.BytesRead, Events: s.Events, DroppedQueueFull: s.DroppedQueueFull}.Values()
	vs = append(vs, component.Value{Key: "pending_bytes", N: int64(in.q.Bytes()), Kind: component.Gauge})
	sum := fmt.Sprintf("own log records at %s and above: %d taken, %d dropped (queue full)", in.cfg.Level, s.LinesRead, s.DroppedQueueFull)
	return component.Description{Values: vs, Summary: sum}
}
