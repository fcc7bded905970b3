package httpin

import (
	"sync/atomic"

	"github.com/edge-agent/edge-agent/connector/input"
)

// stats are the input's counters, all in one place for status and
// metrics. Safe for concurrent use.
type stats struct {
	// requests received; stored the ones answered 200 after a commit;
	// records taken from them (the queue counts those handed to the
	// scheduler); bytes of bodies, decompressed.
	requests, stored, records, bytes atomic.Int64
	// refused (429), badRequests (400), tooLarge (413), unauthorized
	// (401), commitTimeouts (503 after commit-timeout-ms).
	refused, badRequests, tooLarge, unauthorized, commitTimeouts atomic.Int64
	invalid                                                      atomic.Int64
	// connections open now (a gauge) and accepted.
	connections, connectionsTotal atomic.Int64
}

// Stats maps the counters onto the agent's: LinesRead are records,
// BytesRead body bytes, ParseErrors requests answered 400,
// DroppedQueueFull requests answered 429 (refused, not dropped: the
// sender retries), Errors the 401, 413 and commit timeouts.
func (in *Input) Stats() input.Stats {
	s := &in.stats
	return input.Stats{
		LinesRead:        s.records.Load(),
		BytesRead:        s.bytes.Load(),
		Events:           in.q.Handed(),
		InvalidSequences: s.invalid.Load(),
		ParseErrors:      s.badRequests.Load(),
		DroppedQueueFull: s.refused.Load(),
		Errors:           s.unauthorized.Load() + s.tooLarge.Load() + s.commitTimeouts.Load(),
		Connections:      s.connections.Load(),
		ConnectionsTotal: s.connectionsTotal.Load(),
	}
}
