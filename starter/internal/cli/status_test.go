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

// The files line appears only when a file input is configured, and every
// input that is not a file input has its own line.
func TestStatusTextInputKinds(t *testing.T) {
	journal := api.Input{ID: "journal", Type: "journald", LinesRead: 12, Events: 12, Cursor: "s=abc;i=1"}
	sys := api.Input{ID: "sys", Type: "syslog", Connections: 1, ConnectionsTotal: 3, LinesRead: 40}
	relay := api.Input{ID: "relay", Type: "edgesocket"}
	app := api.Input{ID: "app", Type: "file", FilesTracked: 2, FilesOpen: 1, Events: 7}
	cases := []struct {
		name         string
		input        *api.Input
		inputs       []api.Input
		want, absent []string
	}{
		{"single file input", &api.Input{Type: "file", FilesTracked: 3}, []api.Input{{ID: "in-1", Type: "file"}},
			[]string{"files:           3 tracked, 0 open"}, []string{"input in-1"}},
		{"stopped agent, single file input", &api.Input{Type: "file", FilesTracked: 3}, nil,
			[]string{"files:           3 tracked"}, nil},
		{"journald only", &api.Input{Type: "journald"}, []api.Input{journal},
			[]string{"input journal (journald):  12 entries, 0 bytes, 12 events, 0 restarts, cursor s=abc;i=1"}, []string{"files:"}},
		{"journald without a cursor yet", &api.Input{Type: "journald"}, []api.Input{{ID: "journal", Type: "journald"}},
			[]string{"input journal (journald):  0 entries, 0 bytes, 0 events, 0 restarts, cursor -"}, []string{"files:"}},
		{"syslog only", &api.Input{Type: "syslog"}, []api.Input{sys},
			[]string{"input sys (syslog):  1 connections open (3 accepted, 0 refused), 40 messages"}, []string{"files:"}},
		{"relay without collectors", &api.Input{Type: "edgesocket"}, []api.Input{relay},
			[]string{"relay relay:     0 collectors connected, 0 batches read since start"}, []string{"files:"}},
		{"mixed", &api.Input{FilesTracked: 2, FilesOpen: 1}, []api.Input{app, journal, sys},
			[]string{"files:           2 tracked, 1 open", "input app:", "2 files tracked, 1 open, 7 events",
				"input journal (journald):", "input sys (syslog):"},
			[]string{"input journal:", "input sys:"}},
		{"a type without its own line", &api.Input{Type: "other"}, []api.Input{{ID: "x", Type: "other", LinesRead: 5, Events: 5}},
			[]string{"input x (other):", "5 read, 0 bytes, 5 events, 0 errors"}, []string{"files:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeStatusText(&b, api.Status{Running: true, PID: 7, Input: tc.input, Inputs: tc.inputs}, "edge-agent.pid", nil)
			// The columns' width depends on the longest label.
			text := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tc.want {
				if !strings.Contains(text, strings.Join(strings.Fields(w), " ")) {
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

func TestStatusTextProcessors(t *testing.T) {
	var b bytes.Buffer
	in := api.Input{ID: "app", Type: "file", Processors: []api.Processor{
		{Step: 0, Kind: "drop", In: 10, Out: 7, Dropped: 3},
		{Step: 1, Kind: "redact", In: 7, Out: 7, Counts: map[string]uint64{"redacted_email": 2, "redacted_ipv4": 0}},
	}}
	writeStatusText(&b, api.Status{Running: true, PID: 7, Inputs: []api.Input{in}}, "edge-agent.pid", nil)
	for _, want := range []string{"[0] drop in 10 out 7 dropped 3", "[1] redact in 7 out 7 redacted email 2"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "ipv4") {
		t.Errorf("status shows a zero count:\n%s", b.String())
	}
}
