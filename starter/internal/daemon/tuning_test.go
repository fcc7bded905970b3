package daemon

import (
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/config"
)

// TestHasRelayInput: an edgesocket input, in the list or as the single
// input, makes the agent a relay.
func TestHasRelayInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  config.Config
		want bool
	}{
		{"file only", config.Config{Inputs: []config.InputEntry{{Key: "input", OptionalID: true, Type: "file"}}}, false},
		{"single edgesocket", config.Config{Inputs: []config.InputEntry{{Key: "input", OptionalID: true, Type: "edgesocket"}}}, true},
		{"edgesocket in the list", config.Config{Inputs: []config.InputEntry{{ID: "a", Type: "file"}, {ID: "relay", Type: "edgesocket"}}}, true},
		{"list without it", config.Config{Inputs: []config.InputEntry{{ID: "a", Type: "syslog"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasRelayInput(&tc.cfg); got != tc.want {
				t.Fatalf("hasRelayInput = %v, want %v", got, tc.want)
			}
		})
	}
}
