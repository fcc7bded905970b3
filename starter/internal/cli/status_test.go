package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/api"
)

// With several inputs the text status has a line per input; with one it
// stays as it was.
func TestStatusTextPerInput(t *testing.T) {
	cases := []struct {
		name   string
		inputs []api.Input
		want   []string
		absent string
	}{
		{"one input", []api.Input{{ID: "in-1", Type: "file", Events: 4}}, nil, "input in-1:"},
		{"two inputs", []api.Input{
			{ID: "app", Type: "file", FilesTracked: 2, FilesOpen: 1, Events: 7, Filtered: 3},
			{ID: "db", Type: "file", FilesTracked: 1, Events: 2},
		}, []string{
			"2 files tracked, 1 open, 7 events, 3 filtered",
			"1 files tracked, 0 open, 2 events, 0 filtered",
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeStatusText(&b, api.Status{Running: true, PID: 7, Inputs: tc.inputs}, "edge-agent.pid", nil)
			for i, w := range tc.want {
				if !strings.Contains(b.String(), "input "+tc.inputs[i].ID+":") || !strings.Contains(b.String(), w) {
					t.Errorf("status lacks %q:\n%s", w, b.String())
				}
			}
			if tc.absent != "" && strings.Contains(b.String(), tc.absent) {
				t.Errorf("status has %q:\n%s", tc.absent, b.String())
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

// A relay's status lists its connected collectors with their rate and
// last error, and the names that left with an error.
func TestStatusTextRelayCollectors(t *testing.T) {
	in := api.Input{ID: "relay", Type: "edgesocket",
		Collectors: []api.Collector{
			{Name: "web-01", Remote: "10.0.0.5:41000", Batches: 1200, Received: 1190, Refused: 10, BatchesPerSec: 42.5, LastError: "replied QUEUE_FULL:500"},
			{Name: "db-01", Remote: "10.0.0.6:41002", Batches: 30, Received: 30, BatchesPerSec: 1},
		},
		CollectorTotals: []api.CollectorTotal{
			{Name: "db-01", Connected: 1, Batches: 30},
			{Name: "gone-01", Batches: 5, LastError: "gone-01 10.0.0.7:4: request line over the limit"},
			{Name: "web-01", Connected: 1, Batches: 1200},
		}}
	var b bytes.Buffer
	writeStatusText(&b, api.Status{Running: true, PID: 7, Inputs: []api.Input{in}}, "edge-agent.pid", nil)
	for _, want := range []string{
		"relay relay:", "2 collectors connected, 1235 batches read since start",
		"web-01 10.0.0.5:41000: 42.5 batches/s, 1200 batches, 1190 stored, 10 refused; last error: replied QUEUE_FULL:500",
		"db-01 10.0.0.6:41002: 1.0 batches/s",
		"disconnected:", "gone-01: last error",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}
