package component

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

type factory string

func (f factory) Type() string { return string(f) }

var errUnknown = errors.New("unknown part type")

func TestRegistry(t *testing.T) {
	r := NewRegistry(errUnknown, factory("File"), factory("syslog"))
	if got := r.Types(); !reflect.DeepEqual(got, []string{"file", "syslog"}) {
		t.Errorf("Types = %v", got)
	}
	for _, typ := range []string{"file", " FILE ", "Syslog"} {
		if f, err := r.Get(typ); err != nil || !strings.EqualFold(string(f), strings.TrimSpace(typ)) {
			t.Errorf("Get(%q) = %q, %v", typ, f, err)
		}
	}
	f, err := r.Get("kafka")
	if !errors.Is(err, errUnknown) || f != "" || !strings.Contains(err.Error(), `"kafka" (known: file, syslog)`) {
		t.Errorf("Get(kafka) = %q, %v", f, err)
	}
}

func TestSum(t *testing.T) {
	a := Description{Values: []Value{
		{Key: "lines", N: 1},
		{Key: "bytes", N: 10, Metric: "bytes_total", Total: true, Help: "b"},
		{Metric: "per_name", N: 2, Labels: []Label{{"name", "x"}}},
	}}
	b := Description{Values: []Value{
		{Key: "bytes", N: 5, Metric: "bytes_total", Total: true, Help: "b"},
		{Metric: "per_name", N: 3, Labels: []Label{{"name", "y"}}},
		{Metric: "per_name", N: 4, Labels: []Label{{"name", "x"}}},
		{Key: "only_b", N: 7, Kind: Gauge},
	}}
	got := Sum(a, b, Description{})
	want := []Value{
		{Key: "lines", N: 1},
		{Key: "bytes", N: 15, Metric: "bytes_total", Total: true, Help: "b"},
		{Metric: "per_name", N: 6, Labels: []Label{{"name", "x"}}},
		{Metric: "per_name", N: 3, Labels: []Label{{"name", "y"}}},
		{Key: "only_b", N: 7, Kind: Gauge},
	}
	if !reflect.DeepEqual(got.Values, want) {
		t.Errorf("Sum =\n%+v\nwant\n%+v", got.Values, want)
	}
	if n, ok := got.Value("bytes"); !ok || n != 15 {
		t.Errorf("Value(bytes) = %d, %v", n, ok)
	}
	if _, ok := got.Value(""); ok {
		t.Error("Value(\"\") found a figure without a key")
	}
	if len(a.Values) != 3 || a.Values[1].N != 10 {
		t.Errorf("Sum changed its argument: %+v", a.Values)
	}
}

func TestCheck(t *testing.T) {
	ok := Description{
		Values: []Value{{Key: "n", Metric: "n_total", Help: "h", Labels: []Label{{"reason", "x"}}}, {Metric: "n_total", Help: "h", Labels: []Label{{"reason", "y"}}}},
		Texts:  []Text{{Key: "cursor"}}, Records: []Record{{Key: "peers"}},
	}
	if err := Check(ok); err != nil {
		t.Errorf("Check(valid) = %v", err)
	}
	for name, d := range map[string]Description{
		"key twice":         {Values: []Value{{Key: "n"}}, Texts: []Text{{Key: "n"}}},
		"reserved key":      {Records: []Record{{Key: KeyFiles}}},
		"bad metric name":   {Values: []Value{{Metric: "a-b", Help: "h"}}},
		"no help":           {Values: []Value{{Metric: "a"}}},
		"bad label":         {Values: []Value{{Metric: "a", Help: "h", Labels: []Label{{"__x", "v"}}}}},
		"same series twice": {Values: []Value{{Metric: "a", Help: "h"}, {Key: "k", Metric: "a", Help: "h"}}},
	} {
		if Check(d) == nil {
			t.Errorf("%s: Check found nothing", name)
		}
	}
}
