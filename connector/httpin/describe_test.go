package httpin

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
	in.stats.requests.Store(5)
	in.stats.refused.Store(2)
	in.stats.stored.Store(3)
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if n, ok := d.Value("requests_refused"); !ok || n != 2 {
		t.Errorf("requests_refused = %d (reported %v), want 2", n, ok)
	}
	if !strings.Contains(d.Summary, "5 requests (3 stored, 2 refused full") {
		t.Errorf("summary %q lacks %q", d.Summary, "5 requests (3 stored, 2 refused full")
	}
}
