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
