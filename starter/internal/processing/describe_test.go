package processing

import (
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/component"
)

// A chain describes a series per processor and outcome, its redactions
// per detector, dedup's held events, a record and a brief line per
// processor; a chain without processors describes nothing.
func TestChainStatsDescribe(t *testing.T) {
	st := ChainStats{Steps: []ProcessorStats{
		{Step: 0, Kind: "drop", In: 10, Out: 7, Dropped: 3},
		{Step: 1, Kind: "redact", In: 7, Out: 7, Extra: []Counter{{Name: "redacted_email", Value: 2}}},
		{Step: 2, Kind: "dedup", In: 7, Out: 2, Folded: 4, Held: 1, Extra: []Counter{{Name: "keys_over_cap", Value: 0}}},
	}}
	d := st.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	series := map[string]int64{}
	for _, v := range d.Values {
		var ls []string
		for _, l := range v.Labels {
			ls = append(ls, l.Name+"="+l.Value)
		}
		series[v.Metric+"{"+strings.Join(ls, ",")+"}"] = v.N
	}
	for want, n := range map[string]int64{
		"processor_events_total{step=0,kind=drop,outcome=dropped}":        3,
		"processor_events_total{step=2,kind=dedup,outcome=folded}":        4,
		"processor_events_total{step=2,kind=dedup,outcome=keys_over_cap}": 0,
		"processor_held_events{step=2,kind=dedup}":                        1,
		"processor_redactions_total{step=1,detector=email}":               2,
	} {
		if got, ok := series[want]; !ok || got != n {
			t.Errorf("%s = %d (reported %v), want %d", want, got, ok, n)
		}
	}
	if len(d.Records) != 1 || d.Records[0].Key != "processors" {
		t.Fatalf("records %+v", d.Records)
	}
	docs := d.Records[0].Value.([]Doc)
	if len(docs) != 3 || docs[1].Counts["redacted_email"] != 2 || docs[2].Held != 1 || docs[0].Dropped != 3 {
		t.Errorf("docs %+v", docs)
	}
	if len(d.Lines) != 3 || !d.Lines[2].Brief || d.Lines[2].Text != "[2] dedup in 7 out 2 folded 4 held 1" ||
		d.Lines[1].Text != "[1] redact in 7 out 7 redacted email 2" {
		t.Errorf("lines %+v", d.Lines)
	}
	if e := (ChainStats{}).Describe(); len(e.Values)+len(e.Lines)+len(e.Records) != 0 {
		t.Errorf("empty chain describes %+v", e)
	}
}
