package cli

import (
	"slices"
	"testing"
)

// The restarted agent runs the same command, less the readiness pipe of
// start --background, which belonged to the first run.
func TestRestartArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"edge-agent", "start", "--config", "c.yaml"}, []string{"edge-agent", "start", "--config", "c.yaml"}},
		{[]string{"edge-agent", "start", "--notify-fd", "3", "--config", "c.yaml"}, []string{"edge-agent", "start", "--config", "c.yaml"}},
		{[]string{"edge-agent", "start", "--notify-fd=3", "c.yaml"}, []string{"edge-agent", "start", "c.yaml"}},
		{[]string{"edge-agent", "start", "-notify-fd", "3"}, []string{"edge-agent", "start"}},
	} {
		if got := restartArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("restartArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
