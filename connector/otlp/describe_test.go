package otlp

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
	in.stats.exports.Store(4)
	in.stats.rejected.Store(1)
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if n, ok := d.Value("records_rejected"); !ok || n != 1 {
		t.Errorf("records_rejected = %d (reported %v), want 1", n, ok)
	}
	if !strings.Contains(d.Summary, "4 exports") {
		t.Errorf("summary %q lacks %q", d.Summary, "4 exports")
	}
}
