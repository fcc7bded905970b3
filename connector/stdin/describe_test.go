package stdin

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
	in.stats.lines.Store(9)
	in.eof.Store(true)
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if n, ok := d.Value("lines_read"); !ok || n != 9 {
		t.Errorf("lines_read = %d (reported %v), want 9", n, ok)
	}
	if !strings.Contains(d.Summary, "at end of input, 9 lines") {
		t.Errorf("summary %q lacks %q", d.Summary, "at end of input, 9 lines")
	}
}
