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
			Help: input.HelpConnections},
		component.Value{Key: "connections_total", OmitZero: true, N: s.ConnectionsTotal},
		component.Value{Key: "connections_refused", OmitZero: true, N: s.ConnectionsRefused},
		component.Value{Key: "parse_errors", OmitZero: true, N: s.ParseErrors, Metric: "input_parse_errors_total",
			Help: input.HelpParseErrors},
		dropped("dropped_malformed", "malformed", s.DroppedMalformed),
		dropped("dropped_receive_buffer", "receive_buffer", s.DroppedReceiveBuffer),
		closed("connections_evicted", "evicted", s.ConnectionsEvicted),
		closed("connections_first_byte_timeout", "first_byte_timeout", s.ConnectionsTimedOut),
		closed("", "refused", s.ConnectionsRefused),
		authFailed("auth_failed_no_certificate", "no_certificate", s.AuthFailedNoCert),
		authFailed("auth_failed_bad_certificate", "bad_certificate", s.AuthFailedBadCert),
	)
	return component.Description{
		Values: vs,
		Summary: fmt.Sprintf("%d connections open (%d accepted, %d refused), %d messages, %d bytes, %d parse errors, %d dropped (queue full)",
			s.Connections, s.ConnectionsTotal, s.ConnectionsRefused, s.LinesRead, s.BytesRead, s.ParseErrors, s.DroppedQueueFull),
	}
}

func reason(r string) []component.Label { return []component.Label{{Name: "reason", Value: r}} }

func dropped(key, r string, n int64) component.Value {
	return component.Value{Key: key, OmitZero: true, N: n, Metric: "input_dropped_total", Labels: reason(r), Help: input.HelpDropped}
}

func closed(key, r string, n int64) component.Value {
	return component.Value{Key: key, OmitZero: true, N: n, Metric: "input_connections_closed_total", Labels: reason(r),
		Help: "Connections a listening input closed before they sent data, by reason (evicted: for a newcomer when the budget was full; first_byte_timeout; refused: no room)."}
}

func authFailed(key, r string, n int64) component.Value {
	return component.Value{Key: key, OmitZero: true, N: n, Metric: "input_auth_failures_total", Labels: reason(r),
		Help: "TLS handshakes a listening input refused for the client certificate (mutual TLS), by reason (no_certificate, bad_certificate)."}
}
