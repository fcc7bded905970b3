package component

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The status document's own keys of a part, beside what it describes: a
// Description's keys differ from them.
const (
	KeyID      = "id"
	KeyType    = "type"
	KeySummary = "summary"
	KeyLines   = "lines"
	KeyFiles   = "files"
)

var reservedKeys = []string{KeyID, KeyType, KeySummary, KeyLines, KeyFiles}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Check reports every way d breaks the rules its fields state (keys
// distinct and not reserved, metric and label names Prometheus accepts,
// one series per metric and label values, Help on every metric), for the
// tests of the parts that describe themselves.
func Check(d Description) error {
	var errs []error
	keys := map[string]bool{}
	key := func(k, what string) {
		switch {
		case k == "":
		case keys[k]:
			errs = append(errs, fmt.Errorf("%s key %q used twice", what, k))
		case slices.Contains(reservedKeys, k):
			errs = append(errs, fmt.Errorf("%s key %q is the document's own", what, k))
		}
		keys[k] = true
	}
	series := map[string]bool{}
	for _, v := range d.Values {
		key(v.Key, "value")
		if v.Metric == "" {
			continue
		}
		if !metricName.MatchString(v.Metric) {
			errs = append(errs, fmt.Errorf("metric name %q", v.Metric))
		}
		if v.Help == "" {
			errs = append(errs, fmt.Errorf("metric %s has no help", v.Metric))
		}
		for _, l := range v.Labels {
			if !labelName.MatchString(l.Name) || strings.HasPrefix(l.Name, "__") {
				errs = append(errs, fmt.Errorf("metric %s: label name %q", v.Metric, l.Name))
			}
		}
		id := seriesID(Value{Metric: v.Metric, Labels: v.Labels})
		if series[id] {
			errs = append(errs, fmt.Errorf("metric %s %v reported twice", v.Metric, v.Labels))
		}
		series[id] = true
	}
	for _, t := range d.Texts {
		key(t.Key, "text")
	}
	for _, r := range d.Records {
		key(r.Key, "record")
	}
	return errors.Join(errs...)
}
