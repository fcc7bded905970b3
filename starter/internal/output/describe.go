package output

import "github.com/edge-agent/edge-agent/connector/component"

// ConnectionStates are the states of a connection to the engine, as the
// agent reports them (its status' connection, each endpoint's state):
// idle before the first send, connected, unavailable (the engine cannot be
// reached), rejected (another collector holds the ingress), auth_failed
// and decrypt_failed (the engine refuses the token or the key). A state
// series is exported for each, so an alert can select a state before it
// first holds.
func ConnectionStates() []string {
	return []string{"idle", "connected", "unavailable", "rejected", "auth_failed", "decrypt_failed"}
}

var _ component.Describer = (*Endpoints)(nil)

// Describe gives a series per endpoint of the list: its state (1 for the
// one its last send or probe found, 0 for the others), whether it is sent
// to, batches sent, received and switches to it. An agent has one output,
// so the series carry only their own labels. Safe for concurrent use.
func (e *Endpoints) Describe() component.Description {
	var d component.Description
	for _, ep := range e.Endpoints() {
		at := []component.Label{{Name: "endpoint", Value: ep.Endpoint}}
		for _, s := range ConnectionStates() {
			d.Values = append(d.Values, component.Value{Metric: "output_endpoint_state", Kind: component.Gauge, N: b2n(ep.State == s),
				Labels: []component.Label{at[0], {Name: "state", Value: s}},
				Help:   "1 for each endpoint's connection state (what its last send or probe found), 0 for the others; only with output.endpoints."})
		}
		d.Values = append(d.Values,
			component.Value{Metric: "output_endpoint_active", Kind: component.Gauge, N: b2n(ep.Active), Labels: at,
				Help: "1 while the endpoint is sent to (failover: the active one; spread: every endpoint up)."},
			component.Value{Metric: "output_endpoint_batches_sent_total", N: int64(ep.Sent), Labels: at,
				Help: "Batch lines written to the endpoint, resends included."},
			component.Value{Metric: "output_endpoint_batches_received_total", N: int64(ep.Received), Labels: at,
				Help: "Batches the endpoint answered RECEIVED."},
			component.Value{Metric: "output_endpoint_switches_total", N: int64(ep.Switches), Labels: at,
				Help: "Times failover made the endpoint the active one."},
		)
	}
	return d
}

func b2n(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
