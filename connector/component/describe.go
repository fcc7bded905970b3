package component

import "strings"

// Describer is implemented by running parts that say what they do.
// Describe is called from other goroutines than the one driving the part
// (status requests, scrapes), so it must be safe for concurrent use, and
// cheap: it runs at every scrape.
type Describer interface {
	Describe() Description
}

// Kind says how a Value moves.
type Kind uint8

// The kinds of Value.
const (
	Counter Kind = iota // only grows while the part lives
	Gauge               // goes up and down
)

// Value is one named figure of a part.
type Value struct {
	// Key names it in the status document ("lines_read"); "" keeps it out
	// (a series per label value, such as a relay's per token name).
	Key string
	// OmitZero leaves it out of the status document while it is 0.
	OmitZero bool
	// Metric is its Prometheus name after the agent's prefix
	// ("input_connections"); "" keeps it off /metrics. Every part that
	// reports a Metric gives it the same Help, Kind, Total and label
	// names: define shared figures in one place (the kind's package).
	Metric string
	Help   string
	Kind   Kind
	// Total makes the series the sum over every part of the kind, without
	// the part's id as a label (an agent-wide series); otherwise the series
	// carries the part's id.
	Total bool
	// Labels are the series' labels besides the part's id.
	Labels []Label
	N      int64
}

// Label is one label of a series.
type Label struct{ Name, Value string }

// Text is a named string of the status document (a journal cursor); an
// empty Value is left out.
type Text struct{ Key, Value string }

// Line is one line of detail for people, shown as "Label: Text". A Brief
// line is shown by compact views (top) too, under the part's row.
type Line struct {
	Label, Text string
	Brief       bool
}

// Record is a structured part of the status document (a relay's
// collectors), encoded as JSON under Key. The views do not read it back.
type Record struct {
	Key   string
	Value any
}

// Description is what a part says of itself at one moment. The keys of
// Values, Texts and Records are distinct and none is one of the status
// document's own (KeyID …); Check tells.
type Description struct {
	Values []Value
	Texts  []Text
	// Summary is one line for people with the figures that matter most
	// for this type ("3 files tracked, 1 open, 120 events, 0 filtered").
	Summary string
	// Lines are further lines for people, in order. They go into every
	// status document: the part bounds them.
	Lines []Line
	// Files are the files the part tracks; nil when it reads no files (an
	// empty list: it reads files, none now).
	Files   []FileStatus
	Records []Record
}

// Value returns the figure under key, and whether the part reports it.
func (d Description) Value(key string) (int64, bool) {
	for _, v := range d.Values {
		if v.Key == key && key != "" {
			return v.N, true
		}
	}
	return 0, false
}

// With returns d followed by o's Values, Texts, Lines and Records: what a
// part and a stage it runs (an input's processors) say together. o's
// Summary and Files are not taken.
func (d Description) With(o Description) Description {
	d.Values = append(d.Values[:len(d.Values):len(d.Values)], o.Values...)
	d.Texts = append(d.Texts[:len(d.Texts):len(d.Texts)], o.Texts...)
	d.Lines = append(d.Lines[:len(d.Lines):len(d.Lines)], o.Lines...)
	d.Records = append(d.Records[:len(d.Records):len(d.Records)], o.Records...)
	return d
}

// Sum adds up the Values of ds, one Value per key, metric and label set,
// in the order first seen, each keeping the first one's Help, Kind and
// flags. The other parts of the descriptions are not summed.
func Sum(ds ...Description) Description {
	var out Description
	at := map[string]int{}
	for _, d := range ds {
		for _, v := range d.Values {
			id := seriesID(v)
			if i, ok := at[id]; ok {
				out.Values[i].N += v.N
				continue
			}
			at[id] = len(out.Values)
			out.Values = append(out.Values, v)
		}
	}
	return out
}

func seriesID(v Value) string {
	var b strings.Builder
	b.WriteString(v.Key)
	b.WriteByte(0)
	b.WriteString(v.Metric)
	for _, l := range v.Labels {
		b.WriteByte(0)
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
	}
	return b.String()
}

// FileStatus is one file a part tracks.
type FileStatus struct {
	Path string
	// Identity is the key its position is saved under (for the file
	// input: device, inode and a fingerprint of the first bytes).
	Identity string
	// Offset is just past the last byte delivered in an event.
	Offset int64
	// Size is the file's size as last seen.
	Size int64
	// Lag is Size - Offset: bytes written but not delivered yet.
	Lag  int64
	Open bool
}
