package output

import (
	"testing"

	"github.com/edge-agent/edge-agent/connector/component"
)

// A list of endpoints describes a series per endpoint: one state series
// per connection state (1 for its own), whether it is sent to, batches
// sent and received.
func TestEndpointsDescribe(t *testing.T) {
	a, b := newFake(false), newFake(true)
	e := newTestEndpoints(ModeFailover, a, b)
	defer e.Close()
	mustSend(t, e, ids(1, 3))

	d := e.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, v := range d.Values {
		name := v.Metric
		for _, l := range v.Labels {
			name += " " + l.Name + "=" + l.Value
		}
		got[name] = v.N
	}
	for name, want := range map[string]int64{
		"output_endpoint_state endpoint=engine-0:9999 state=unavailable": 1,
		"output_endpoint_state endpoint=engine-0:9999 state=connected":   0,
		"output_endpoint_state endpoint=engine-1:9999 state=connected":   1,
		"output_endpoint_state endpoint=engine-1:9999 state=idle":        0,
		"output_endpoint_active endpoint=engine-1:9999":                  1,
		"output_endpoint_active endpoint=engine-0:9999":                  0,
		"output_endpoint_batches_received_total endpoint=engine-1:9999":  3,
		"output_endpoint_switches_total endpoint=engine-1:9999":          1,
	} {
		if n, ok := got[name]; !ok || n != want {
			t.Errorf("%s = %d (described %v), want %d", name, n, ok, want)
		}
	}
	if states := len(ConnectionStates()); len(d.Values) != 2*(states+4) {
		t.Errorf("%d series for 2 endpoints, want %d", len(d.Values), 2*(states+4))
	}
}
