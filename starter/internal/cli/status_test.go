package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/api"
)

// Each input has its line, as it described itself: its summary, then its
// lines of detail; the view knows no input type.
func TestStatusTextPerInput(t *testing.T) {
	sensor := api.Input{ID: "s1", Type: "sensor", Summary: "12 readings, probe p1 ok", Lines: []api.Line{
		{Label: "probe", Text: "p1 10.0.0.5: 42.5 readings/s"},
		{Label: "probe", Text: "p2 10.0.0.6: last error: line one\nline two"},
		{Text: "… (status --json lists every probe)"},
	}}
	cases := []struct {
		name         string
		inputs       []api.Input
		want, absent []string
	}{
		{"one input", []api.Input{{ID: "in-1", Type: "tail", Summary: "3 files tracked, 1 open", Files: []api.File{}}},
			[]string{"input in-1 (tail): 3 files tracked, 1 open"}, []string{"probe:"}},
		{"several, with detail lines", []api.Input{{ID: "app", Type: "tail", Summary: "2 files"}, sensor}, []string{
			"input app (tail): 2 files",
			"input s1 (sensor): 12 readings, probe p1 ok",
			"probe: p1 10.0.0.5: 42.5 readings/s",
			"probe: p2 10.0.0.6: last error: line one; line two",
			"… (status --json lists every probe)",
		}, nil},
		{"an input that describes nothing", []api.Input{{ID: "x", Type: "other"}}, []string{"input x (other): -"}, nil},
		{"stopped agent: no input lines", nil, nil, []string{"input "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeStatusText(&b, api.Status{Running: true, PID: 7, Inputs: tc.inputs}, "edge-agent.pid", nil)
			// The columns' width depends on the longest label.
			text := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("status lacks %q:\n%s", w, b.String())
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(text, a) {
					t.Errorf("status has %q:\n%s", a, b.String())
				}
			}
		})
	}
}

// A running agent's text status shows the send-rate cap, or that there is
// none, and the backlog's ETA at it.
func TestStatusTextRateLimit(t *testing.T) {
	cases := []struct {
		name string
		st   api.Status
		want []string
	}{
		{"none", api.Status{Running: true}, []string{"rate limit:      none"}},
		{"both", api.Status{Running: true, Counters: &api.Counters{SendThrottledSeconds: 2.5},
			RateLimit: &api.RateLimit{EventsPerSecond: 2.5, BytesPerSecond: 4096, BurstEvents: 3, BurstBytes: 4916, BacklogETASeconds: 3600}},
			[]string{"2.5 events/s, 4096 bytes/s (burst 3 events, 4916 bytes); backlog ETA 1h0m0s at the cap", "2.5s waiting for the cap"}},
		{"bytes", api.Status{Running: true, RateLimit: &api.RateLimit{BytesPerSecond: 100, BurstBytes: 100, BacklogETASeconds: 12.4}},
			[]string{"100 bytes/s (burst 100 bytes); backlog ETA 12s at the cap"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeStatusText(&b, tc.st, "edge-agent.pid", nil)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("status lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// A running agent's text status shows the WAL commit estimate once a
// commit was measured, and nothing of it before.
func TestStatusTextCommitEstimate(t *testing.T) {
	cases := []struct {
		name    string
		st      api.Status
		want    string
		wantNot bool
	}{
		{"not measured", api.Status{Running: true}, "commit:", true},
		{"disk only", api.Status{Running: true, WAL: api.WALStatus{Commit: &api.CommitStatus{FsyncSeconds: 0.0215, GroupMaxEvents: 4096}}},
			"fsync 21.5ms per commit, groups up to 4096 events", false},
		{"under load", api.Status{Running: true, WAL: api.WALStatus{Commit: &api.CommitStatus{FsyncSeconds: 0.06, RowSeconds: 1.5e-6, GroupMaxEvents: 20971}}},
			"fsync 60ms per commit, groups up to 20971 events (1.5µs per event under load besides)", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeStatusText(&b, tc.st, "edge-agent.pid", nil)
			if got := strings.Contains(b.String(), tc.want); got == tc.wantNot {
				t.Errorf("status contains %q: %v, want %v:\n%s", tc.want, got, !tc.wantNot, b.String())
			}
		})
	}
}
