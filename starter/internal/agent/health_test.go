package agent

import (
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

func TestHealthComponents(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	base := Status{State: "running", LastTurn: now, Connection: "connected"}
	for _, tc := range []struct {
		name      string
		change    func(*Status)
		healthy   bool
		component string // the unhealthy one, "" when none
	}{
		{"all well", func(*Status) {}, true, ""},
		{"engine unavailable is retried, not unhealthy", func(s *Status) { s.Connection = "unavailable" }, true, ""},
		{"token refused", func(s *Status) { s.Connection = "auth_failed"; s.LastError = "AUTH_FAILED" }, false, ComponentOutput},
		{"key refused", func(s *Status) { s.Connection = "decrypt_failed" }, false, ComponentOutput},
		{"ingress held by another", func(s *Status) { s.Connection = "rejected" }, false, ComponentOutput},
		{"WAL not writable", func(s *Status) { s.WALError = "no space left on device" }, false, ComponentWAL},
		{"loop stalled", func(s *Status) { s.LastTurn = now.Add(-2 * DefaultStallAfter) }, false, ComponentInput},
		{"stopping", func(s *Status) { s.State = "stopping" }, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := base
			tc.change(&st)
			h := st.Health(now, 0)
			if h.Healthy != tc.healthy || (h.Reason == "") != tc.healthy {
				t.Fatalf("healthy %v reason %q, want healthy %v", h.Healthy, h.Reason, tc.healthy)
			}
			for name, c := range h.Components {
				if want := name != tc.component; c.Healthy != want {
					t.Errorf("component %s healthy %v, want %v", name, c.Healthy, want)
				}
				if !c.Healthy && c.LastError == "" {
					t.Errorf("component %s unhealthy without its error", name)
				}
			}
		})
	}
}

// An endpoint of a list that is down is named in the output component
// but does not make the agent unhealthy while the others take the rows.
func TestHealthNamesEndpointsDown(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	st := Status{State: "running", LastTurn: now, Connection: "connected", Endpoints: []output.EndpointStatus{
		{Endpoint: "a:1", State: "unavailable"}, {Endpoint: "b:2", State: "connected", Active: true}}}
	h := st.Health(now, 0)
	out := h.Components[ComponentOutput]
	if !h.Healthy || !out.Healthy || out.LastError != "1 of 2 endpoints down: a:1 unavailable" {
		t.Fatalf("health %+v, output %+v", h, out)
	}
	st.Endpoints[0].State = "connected"
	if out := st.Health(now, 0).Components[ComponentOutput]; out.LastError != "" {
		t.Fatalf("all endpoints up, output %+v", out)
	}
}
