package top

import (
	"fmt"

	"github.com/edge-agent/edge-agent/starter/internal/api"
)

// processorLines are an input's processors under its row: totals since
// start, one line each.
func processorLines(in api.Input) []string {
	var out []string
	for _, p := range in.Processors {
		line := fmt.Sprintf("  [%d] %-10s in %s out %s", p.Step, short(p.Kind, 10), total(p.In), total(p.Out))
		for _, c := range []struct {
			name string
			v    uint64
		}{{"dropped", p.Dropped}, {"folded", p.Folded}, {"sampled out", p.SampledOut}, {"held", p.Held}, {"errors", p.Errors}} {
			if c.v > 0 {
				line += fmt.Sprintf(" %s %s", c.name, total(c.v))
			}
		}
		out = append(out, line)
	}
	return out
}

// total is a count since start: exact up to a million, then in millions.
func total(v uint64) string {
	if v < 1_000_000 {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%.1fM", float64(v)/1e6)
}
