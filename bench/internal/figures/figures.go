// Package figures summarises the repeated runs of a benchmark row: the
// median, and the median with the range, as the tables print them.
package figures

import (
	"fmt"
	"slices"
)

// Median is the median of xs (the mean of the two middle values of an
// even count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// Spread formats the median and min..max of xs with prec decimals,
// "NA" for none.
func Spread(xs []float64, prec int) string {
	if len(xs) == 0 {
		return "NA"
	}
	return fmt.Sprintf("%.*f (%.*f..%.*f)", prec, Median(xs), prec, slices.Min(xs), prec, slices.Max(xs))
}

// Column collects f over the runs that ok accepts, leaving out negative
// (unknown) figures.
func Column[R any](runs []R, ok func(R) bool, f func(R) float64) []float64 {
	var out []float64
	for _, r := range runs {
		if v := f(r); ok(r) && v >= 0 {
			out = append(out, v)
		}
	}
	return out
}
