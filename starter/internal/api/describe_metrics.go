package api

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
)

// metricPrefix starts the name of every series the agent serves.
const metricPrefix = "edge_agent_"

// collectInputs exports what the inputs describe: each Total figure once,
// summed over the inputs and without an input label; each other figure
// with a Metric per input, labelled with its id. A missing series says
// "not reported", never 0.
func collectInputs(ch chan<- prometheus.Metric, st agent.Status) {
	if st.Input != nil {
		for _, v := range st.Input.Values {
			if v.Total && v.Metric != "" {
				ch <- describedMetric(v)
			}
		}
	}
	for _, in := range st.Inputs {
		for _, v := range in.Values {
			if !v.Total && v.Metric != "" {
				ch <- describedMetric(v, component.Label{Name: "input", Value: in.ID})
			}
		}
	}
}

// collectOutput exports what the output describes. An agent has one
// output: its series carry only their own labels.
func collectOutput(ch chan<- prometheus.Metric, st agent.Status) {
	for _, v := range st.Output.Values {
		if v.Metric != "" {
			ch <- describedMetric(v)
		}
	}
}

// describedMetric is v as a series, its labels after the given ones.
func describedMetric(v component.Value, first ...component.Label) prometheus.Metric {
	labels := append(first, v.Labels...)
	names, values := make([]string, len(labels)), make([]string, len(labels))
	for i, l := range labels {
		names[i], values[i] = l.Name, l.Value
	}
	typ := prometheus.CounterValue
	if v.Kind == component.Gauge {
		typ = prometheus.GaugeValue
	}
	d := prometheus.NewDesc(metricPrefix+v.Metric, v.Help, names, nil)
	m, err := prometheus.NewConstMetric(d, typ, float64(v.N), values...)
	if err != nil {
		// A malformed name or label from an input: the scrape reports
		// it rather than the agent panicking.
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
