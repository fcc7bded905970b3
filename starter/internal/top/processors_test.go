package top

import (
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/api"
)

func TestProcessorLines(t *testing.T) {
	got := processorLines(api.Input{Processors: []api.Processor{
		{Step: 0, Kind: "parse", In: 5, Out: 5, Errors: 1},
		{Step: 1, Kind: "dedup", In: 5, Out: 1, Folded: 3, Held: 1},
	}})
	if len(got) != 2 || !strings.Contains(got[0], "[0] parse") || !strings.Contains(got[0], "errors 1") ||
		!strings.Contains(got[1], "folded 3 held 1") {
		t.Errorf("lines %q", got)
	}
}
