package agent

import (
	"testing"
	"time"
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
