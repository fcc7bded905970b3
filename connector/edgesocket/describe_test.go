package edgesocket

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

// The relay describes what it took, a line per collector, its collectors
// as records, and a series per token name.
func TestDescribe(t *testing.T) {
	in := open(t, testConfig())
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if d.Summary != "0 collectors connected, 0 batches read since start" || len(d.Records) != 0 {
		t.Errorf("idle relay: %q, records %v", d.Summary, d.Records)
	}
	c := connect(t, in, "tok-1")
	c.send("__BATCH__:1:{\"a\":1}\n__BATCH__:2:{\"a\":2}\n")
	pollN(t, in, 2)
	in.Committed(2)
	c.expect("RECEIVED")
	c.expect("RECEIVED")

	d = in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if n, ok := d.Value(input.KeyEvents); !ok || n != 2 {
		t.Errorf("events = %d, %v", n, ok)
	}
	if d.Summary != "1 collectors connected, 2 batches read since start" {
		t.Errorf("summary %q", d.Summary)
	}
	if len(d.Lines) != 1 || d.Lines[0].Label != "collector" || !strings.HasPrefix(d.Lines[0].Text, "edge-1 ") ||
		!strings.Contains(d.Lines[0].Text, "2 batches, 2 stored, 0 refused") {
		t.Errorf("lines %+v", d.Lines)
	}
	series := map[string]int64{}
	for _, v := range d.Values {
		if len(v.Labels) == 1 && v.Labels[0] == (component.Label{Name: "name", Value: "edge-1"}) {
			series[v.Metric] = v.N
		}
	}
	for m, want := range map[string]int64{"relay_collectors_connected": 1, "relay_batches_total": 2, "relay_batches_stored_total": 2, "relay_batches_refused_total": 0} {
		if n, ok := series[m]; !ok || n != want {
			t.Errorf("%s{name=edge-1} = %d (described %v), want %d", m, n, ok, want)
		}
	}
	b, err := json.Marshal(d.Records[0].Value)
	if err != nil || d.Records[0].Key != "collectors" || !strings.Contains(string(b), `"name":"edge-1"`) || !strings.Contains(string(b), `"replies_owed":0`) {
		t.Errorf("collectors record %s: %s, %v", d.Records[0].Key, b, err)
	}
}
