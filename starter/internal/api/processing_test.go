package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
)

func TestProcessorCountersInMetricsAndStatus(t *testing.T) {
	st := running()
	st.Inputs = []agent.InputStatus{{ID: "app", Type: "file", Processors: processing.ChainStats{Steps: []processing.ProcessorStats{
		{Step: 0, Kind: "drop", In: 10, Out: 7, Dropped: 3},
		{Step: 1, Kind: "redact", In: 7, Out: 7, Extra: []processing.Counter{{Name: "redacted_email", Value: 2}}},
		{Step: 2, Kind: "dedup", In: 7, Out: 2, Folded: 4, Held: 1, Extra: []processing.Counter{{Name: "keys_over_cap", Value: 0}}},
	}}}}
	srv := serve(t, Options{Source: &fakeSource{st: st}, Version: "v1", Commit: "c"})
	code, body := get(t, srv.URL+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{
		`edge_agent_processor_events_total{input="app",kind="drop",outcome="dropped",step="0"} 3`,
		`edge_agent_processor_events_total{input="app",kind="dedup",outcome="folded",step="2"} 4`,
		`edge_agent_processor_events_total{input="app",kind="dedup",outcome="keys_over_cap",step="2"} 0`,
		`edge_agent_processor_held_events{input="app",kind="dedup",step="2"} 1`,
		`edge_agent_processor_redactions_total{detector="email",input="app",step="1"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	docs := processorDocs(st.Inputs[0].Processors)
	if len(docs) != 3 || docs[1].Counts["redacted_email"] != 2 || docs[2].Held != 1 || docs[0].Dropped != 3 {
		t.Errorf("status documents %+v", docs)
	}
}
