package httpin

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what the listener took (LinesRead are records) and how
// it answered its requests. Safe for concurrent use.
func (in *Input) Describe() component.Description {
	s := &in.stats
	vs := input.Counts{
		LinesRead: s.records.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(),
		Errors: s.unauthorized.Load() + s.tooLarge.Load() + s.commitTimeouts.Load(),
	}.Values()
	answered := func(key, code string, n int64) component.Value {
		return component.Value{Key: key, OmitZero: true, N: n, Metric: "input_requests_total",
			Labels: []component.Label{{Name: "code", Value: code}},
			Help:   "Requests a push input (http) answered, by status code: 200 only once stored."}
	}
	vs = append(vs,
		component.Value{Key: "connections", OmitZero: true, N: s.connections.Load(), Kind: component.Gauge, Metric: "input_connections",
			Help: input.HelpConnections},
		component.Value{Key: "connections_total", OmitZero: true, N: s.connectionsTotal.Load()},
		component.Value{Key: "requests", N: s.requests.Load()},
		answered("requests_stored", "200", s.stored.Load()),
		answered("requests_bad", "400", s.badRequests.Load()),
		answered("requests_unauthorized", "401", s.unauthorized.Load()),
		answered("requests_too_large", "413", s.tooLarge.Load()),
		answered("requests_refused", "429", s.refused.Load()),
		answered("requests_commit_timeout", "503", s.commitTimeouts.Load()),
	)
	return component.Description{Values: vs,
		Summary: fmt.Sprintf("%d requests (%d stored, %d refused full, %d bad), %d records, %d bytes",
			s.requests.Load(), s.stored.Load(), s.refused.Load(), s.badRequests.Load(), s.records.Load(), s.bytes.Load())}
}
