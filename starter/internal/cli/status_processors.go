package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/edge-agent/edge-agent/starter/internal/api"
)

// writeProcessorsText shows each input's processors, one line each:
// "processors (app):  [1] drop in 120 out 100 dropped 20".
func writeProcessorsText(out io.Writer, st api.Status) {
	for _, in := range st.Inputs {
		for _, p := range in.Processors {
			fmt.Fprintf(out, "processors (%s):\t[%d] %s %s\n", in.ID, p.Step, p.Kind, processorCounts(p))
		}
	}
}

// processorCounts is "in N out N", then every other non-zero count.
func processorCounts(p api.Processor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "in %d out %d", p.In, p.Out)
	for _, c := range []struct {
		name string
		v    uint64
	}{{"dropped", p.Dropped}, {"folded", p.Folded}, {"sampled out", p.SampledOut}, {"held", p.Held}, {"errors", p.Errors}} {
		if c.v > 0 {
			fmt.Fprintf(&b, " %s %d", c.name, c.v)
		}
	}
	names := make([]string, 0, len(p.Counts))
	for k := range p.Counts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if p.Counts[k] > 0 {
			fmt.Fprintf(&b, " %s %d", strings.ReplaceAll(k, "_", " "), p.Counts[k])
		}
	}
	return b.String()
}
