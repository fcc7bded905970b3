package mqtt

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
	in.stats.connects.Store(3)
	in.stats.connected.Store(1)
	in.stats.acked.Store(7)
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if n, ok := d.Value("restarts"); !ok || n != 2 {
		t.Errorf("restarts = %d (reported %v), want 2", n, ok)
	}
	if !strings.Contains(d.Summary, "connected (3 sessions)") {
		t.Errorf("summary %q lacks %q", d.Summary, "connected (3 sessions)")
	}
}
