package syslog

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Describe says what the listener took: the figures every input reports
// (LinesRead are messages), then its connections and parse errors. Safe
// for concurrent use.
func (in *Input) Describe() component.Description {
	s := in.Stats()
	vs := input.Counts{
		LinesRead: s.LinesRead, BytesRead: s.BytesRead, Events: s.Events, TruncatedLines: s.TruncatedLines,
		Errors: s.Errors, DroppedQueueFull: s.DroppedQueueFull,
	}.Values()
	vs = append(vs,
		component.Value{Key: "connections", OmitZero: true, N: s.Connections, Kind: component.Gauge, Metric: "input_connections",
			Help: "Connections open to an input that listens (syslog over TCP/TLS)."},
		component.Value{Key: "connections_total", OmitZero: true, N: s.ConnectionsTotal},
		component.Value{Key: "connections_refused", OmitZero: true, N: s.ConnectionsRefused},
		component.Value{Key: "parse_errors", OmitZero: true, N: s.ParseErrors, Metric: "input_parse_errors_total",
			Help: "Messages an input delivered raw because they did not parse."},
	)
	return component.Description{
		Values: vs,
		Summary: fmt.Sprintf("%d connections open (%d accepted, %d refused), %d messages, %d bytes, %d parse errors, %d dropped (queue full)",
			s.Connections, s.ConnectionsTotal, s.ConnectionsRefused, s.LinesRead, s.BytesRead, s.ParseErrors, s.DroppedQueueFull),
	}
}
