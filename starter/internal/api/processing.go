package api

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edge-agent/edge-agent/starter/internal/processing"
)

// Processor is one processor's counters in an input's status document.
type Processor struct {
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

// processorDocs renders a chain's counters for the status document.
func processorDocs(st processing.ChainStats) []Processor {
	var out []Processor
	for _, s := range st.Steps {
		p := Processor{Step: s.Step, Kind: s.Kind, In: s.In, Out: s.Out, Dropped: s.Dropped, Folded: s.Folded,
			SampledOut: s.SampledOut, Held: s.Held, Errors: s.Errors}
		for _, c := range s.Extra {
			if p.Counts == nil {
				p.Counts = make(map[string]uint64, len(s.Extra))
			}
			p.Counts[c.Name] = c.Value
		}
		out = append(out, p)
	}
	return out
}

var (
	dProcEvents     = desc("processor_events_total", "Events through each processor of an input, by outcome: in, out, dropped, folded, sampled_out, errors, and keys_over_cap (dedup) or truncated (truncate).", "input", "step", "kind", "outcome")
	dProcHeld       = desc("processor_held_events", "Events a dedup processor holds now, waiting for their window to close.", "input", "step", "kind")
	dProcRedactions = desc("processor_redactions_total", "Values a redact processor masked, hashed or removed, per detector.", "input", "step", "detector")
)

// processorsCollector exports every input's processor counters from the
// same Snapshot the agent's collector reads.
type processorsCollector struct{ o *Options }

func (c processorsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- dProcEvents
	ch <- dProcHeld
	ch <- dProcRedactions
}

func (c processorsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.o.Source.Snapshot()
	for _, in := range st.Inputs {
		for _, s := range in.Processors.Steps {
			step := strconv.Itoa(s.Step)
			events := func(outcome string, v uint64) {
				ch <- prometheus.MustNewConstMetric(dProcEvents, prometheus.CounterValue, float64(v), in.ID, step, s.Kind, outcome)
			}
			events("in", s.In)
			events("out", s.Out)
			events("dropped", s.Dropped)
			events("folded", s.Folded)
			events("sampled_out", s.SampledOut)
			events("errors", s.Errors)
			if s.Kind == "dedup" {
				ch <- prometheus.MustNewConstMetric(dProcHeld, prometheus.GaugeValue, float64(s.Held), in.ID, step, s.Kind)
			}
			for _, x := range s.Extra {
				if d, ok := strings.CutPrefix(x.Name, "redacted_"); ok {
					ch <- prometheus.MustNewConstMetric(dProcRedactions, prometheus.CounterValue, float64(x.Value), in.ID, step, d)
					continue
				}
				events(x.Name, x.Value)
			}
		}
	}
}
