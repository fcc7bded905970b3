package otlp

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what the receiver took (LinesRead are log records) and
// how it answered the exports. Safe for concurrent use.
func (in *Input) Describe() component.Description {
	s := &in.stats
	vs := input.Counts{
		LinesRead: s.records.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(),
		Errors: s.rejected.Load() + s.commitTimeouts.Load(),
	}.Values()
	vs = append(vs,
		component.Value{Key: "exports", N: s.exports.Load()},
		component.Value{Key: "exports_stored", N: s.stored.Load()},
		component.Value{Key: "exports_refused", OmitZero: true, N: s.refused.Load()},
		component.Value{Key: "exports_bad", OmitZero: true, N: s.badRequests.Load()},
		component.Value{Key: "exports_commit_timeout", OmitZero: true, N: s.commitTimeouts.Load()},
		component.Value{Key: "records_rejected", OmitZero: true, N: s.rejected.Load()},
	)
	return component.Description{Values: vs,
		Summary: fmt.Sprintf("%d exports (%d stored, %d refused, %d bad), %d log records, %d rejected",
			s.exports.Load(), s.stored.Load(), s.refused.Load(), s.badRequests.Load(), s.records.Load(), s.rejected.Load())}
}
