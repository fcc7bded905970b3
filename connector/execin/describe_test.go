package execin

import (
	"github.com/edge-agent/edge-agent/connector/internal/pushq"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/component"
)

// Describe reports the input's own counters under their keys, passes the
// description check the renderers rely on, and sums them up for people.
func TestDescribe(t *testing.T) {
	in := &Input{q: pushq.New(1 << 20)}
	in.stats.runs.Store(2)
	in.stats.lastExit.Store(-1)
	in.stats.failures.Store(1)
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if n, ok := d.Value("restarts"); !ok || n != 1 {
		t.Errorf("restarts = %d (reported %v), want 1", n, ok)
	}
	if !strings.Contains(d.Summary, "2 runs (1 failed, last exit killed)") {
		t.Errorf("summary %q lacks %q", d.Summary, "2 runs (1 failed, last exit killed)")
	}
}
