package config

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/input"
)

// adviseInputs passes on what input configs advise (input.Adviser), and
// warns about sources two entries of `inputs:` both name, as
// far as their configs can tell statically (input.Overlapper): at run
// time the first entry reads such a file and the later one skips it.
func (d *decoder) adviseInputs(cfg *Config) {
	for _, e := range cfg.Inputs {
		if a, ok := e.Config.(input.Adviser); ok {
			for _, w := range a.Advice() {
				d.warn(e.Key+"."+w.Key, "%v", w.Err)
			}
		}
	}
	for j, b := range cfg.Inputs {
		ob, ok := b.Config.(input.Overlapper)
		if !ok {
			continue
		}
		for i := range j {
			a := cfg.Inputs[i]
			if a.Type != b.Type || a.Config == nil {
				continue
			}
			for _, o := range ob.Overlaps(a.Config) {
				d.warn(fmt.Sprintf("inputs[%d].%s", j, o.Key),
					"%s is also read by inputs[%d] (id %q): files matched by both are read by the first input only, and skipped by this one",
					o.Source, i, a.ID)
			}
		}
	}
}
