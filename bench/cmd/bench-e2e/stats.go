package main

import (
	"fmt"
	"io"
	"slices"
)

// result is one run of one config. Negative figures are unknown.
type result struct {
	ok         bool
	lines      int
	bytes      int64
	wall       float64 // seconds: agent start (backlog: sink accepting) to the last unique line
	cpu        float64 // agent CPU seconds
	hwm        int64   // agent peak RSS, bytes
	writeBytes int64   // agent disk writes, bytes
	dups       int
	note       string
}

// spread formats the median and min..max of xs.
func spread(xs []float64, prec int) string {
	if len(xs) == 0 {
		return "NA"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.*f (%.*f..%.*f)", prec, med, prec, s[0], prec, s[len(s)-1])
}

func median(xs []float64) float64 {
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

// column collects f over the runs that reached their count.
func column(rs []result, f func(result) float64) []float64 {
	var out []float64
	for _, r := range rs {
		if v := f(r); r.ok && v >= 0 {
			out = append(out, v)
		}
	}
	return out
}

func printTable(w io.Writer, order []string, all map[string][]result) {
	fmt.Fprintf(w, "%-10s %5s %9s %22s %26s %20s %20s %22s %22s %5s\n",
		"config", "ok", "lines", "wall s", "lines/s", "MB/s", "CPU s", "peak RSS MiB", "disk write MB", "dups")
	for _, c := range order {
		rs := all[c]
		ok, dups, lines := 0, 0, 0
		for _, r := range rs {
			if r.ok {
				ok++
			}
			dups = max(dups, r.dups)
			lines = max(lines, r.lines)
		}
		fmt.Fprintf(w, "%-10s %2d/%-2d %9d %22s %26s %20s %20s %22s %22s %5d\n", c, ok, len(rs), lines,
			spread(column(rs, func(r result) float64 { return r.wall }), 2),
			spread(column(rs, func(r result) float64 { return float64(r.lines) / r.wall }), 0),
			spread(column(rs, func(r result) float64 { return float64(r.bytes) / r.wall / 1e6 }), 1),
			spread(column(rs, func(r result) float64 { return r.cpu }), 2),
			spread(column(rs, func(r result) float64 { return float64(r.hwm) / (1 << 20) }), 1),
			spread(column(rs, func(r result) float64 { return float64(r.writeBytes) / 1e6 }), 0),
			dups)
	}
}
