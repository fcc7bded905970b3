package processing

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/edge-agent/edge-agent/connector/component"
)

// Doc is one processor's counters in an input's status document, under
// the record "processors".
type Doc struct {
	Step       int    `json:"step"`
	Kind       string `json:"kind"`
	In         uint64 `json:"in"`
	Out        uint64 `json:"out"`
	Dropped    uint64 `json:"dropped,omitempty"`
	Folded     uint64 `json:"folded,omitempty"`
	SampledOut uint64 `json:"sampled_out,omitempty"`
	Held       uint64 `json:"held,omitempty"`
	Errors     uint64 `json:"errors,omitempty"`
	// Counts are its own: redactions per detector ("redacted_email"),
	// dedup's keys_over_cap, truncate's truncated.
	Counts map[string]uint64 `json:"counts,omitempty"`
}

const (
	helpEvents     = "Events through each processor of an input, by outcome: in, out, dropped, folded, sampled_out, errors, and keys_over_cap (dedup) or truncated (truncate)."
	helpHeld       = "Events a dedup processor holds now, waiting for their window to close."
	helpRedactions = "Values a redact processor masked, hashed or removed, per detector."
)

// Describe is what the chain adds to its input's description: a series
// per processor and outcome, the record "processors" and one brief line
// per processor ("[1] drop in 120 out 100 dropped 20"). Nothing for a
// chain without processors.
func (st ChainStats) Describe() component.Description {
	var d component.Description
	if len(st.Steps) == 0 {
		return d
	}
	docs := make([]Doc, 0, len(st.Steps))
	for _, s := range st.Steps {
		step := strconv.Itoa(s.Step)
		events := func(outcome string, v uint64) {
			d.Values = append(d.Values, component.Value{Metric: "processor_events_total", Help: helpEvents, N: int64(v),
				Labels: []component.Label{{Name: "step", Value: step}, {Name: "kind", Value: s.Kind}, {Name: "outcome", Value: outcome}}})
		}
		events("in", s.In)
		events("out", s.Out)
		events("dropped", s.Dropped)
		events("folded", s.Folded)
		events("sampled_out", s.SampledOut)
		events("errors", s.Errors)
		if s.Kind == "dedup" {
			d.Values = append(d.Values, component.Value{Metric: "processor_held_events", Help: helpHeld, Kind: component.Gauge, N: int64(s.Held),
				Labels: []component.Label{{Name: "step", Value: step}, {Name: "kind", Value: s.Kind}}})
		}
		doc := Doc{Step: s.Step, Kind: s.Kind, In: s.In, Out: s.Out, Dropped: s.Dropped, Folded: s.Folded,
			SampledOut: s.SampledOut, Held: s.Held, Errors: s.Errors}
		for _, x := range s.Extra {
			if doc.Counts == nil {
				doc.Counts = make(map[string]uint64, len(s.Extra))
			}
			doc.Counts[x.Name] = x.Value
			if det, ok := strings.CutPrefix(x.Name, "redacted_"); ok {
				d.Values = append(d.Values, component.Value{Metric: "processor_redactions_total", Help: helpRedactions, N: int64(x.Value),
					Labels: []component.Label{{Name: "step", Value: step}, {Name: "detector", Value: det}}})
				continue
			}
			events(x.Name, x.Value)
		}
		docs = append(docs, doc)
		d.Lines = append(d.Lines, component.Line{Label: "processor", Text: doc.line(), Brief: true})
	}
	d.Records = append(d.Records, component.Record{Key: "processors", Value: docs})
	return d
}

// line is "[N] kind in N out N", then every other non-zero count.
func (p Doc) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d] %s in %d out %d", p.Step, p.Kind, p.In, p.Out)
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
