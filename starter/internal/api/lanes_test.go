package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
)

// Each lane's backlog reaches the metrics and the status document.
func TestLanesInMetricsAndStatus(t *testing.T) {
	st := running()
	st.Queue.Lanes = []agent.LaneStatus{{Name: "alarm", Rows: 3, Bytes: 300, OldestAge: 2 * time.Second}, {Name: "default", Rows: 40, Bytes: 4000, OldestAge: 90 * time.Second}}
	srv := serve(t, Options{Source: &fakeSource{st: st}})
	code, body := get(t, srv.URL+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("metrics: status %d", code)
	}
	for _, want := range []string{
		`edge_agent_lane_rows{lane="alarm"} 3`,
		`edge_agent_lane_rows{lane="default"} 40`,
		`edge_agent_lane_oldest_age_seconds{lane="alarm"} 2`,
		`edge_agent_lane_oldest_age_seconds{lane="default"} 90`,
		`edge_agent_lane_bytes{lane="alarm"} 300`,
		`edge_agent_lane_bytes{lane="default"} 4000`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	code, body = get(t, srv.URL+"/debug/status", "")
	if code != http.StatusOK {
		t.Fatalf("status: %d", code)
	}
	var doc Status
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	want := []WALLane{{Name: "alarm", Rows: 3, Bytes: 300, OldestAgeSeconds: 2}, {Name: "default", Rows: 40, Bytes: 4000, OldestAgeSeconds: 90}}
	if !reflect.DeepEqual(doc.WAL.Lanes, want) {
		t.Errorf("status wal.lanes = %+v, want %+v", doc.WAL.Lanes, want)
	}
}
