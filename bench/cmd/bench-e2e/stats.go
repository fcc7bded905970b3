package main

import (
	"fmt"
	"io"

	"github.com/edge-agent/edge-agent/bench/internal/figures"
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

// column collects f over the runs that reached their count.
func column(rs []result, f func(result) float64) []float64 {
	return figures.Column(rs, func(r result) bool { return r.ok }, f)
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
			figures.Spread(column(rs, func(r result) float64 { return r.wall }), 2),
			figures.Spread(column(rs, func(r result) float64 { return float64(r.lines) / r.wall }), 0),
			figures.Spread(column(rs, func(r result) float64 { return float64(r.bytes) / r.wall / 1e6 }), 1),
			figures.Spread(column(rs, func(r result) float64 { return r.cpu }), 2),
			figures.Spread(column(rs, func(r result) float64 { return float64(r.hwm) / (1 << 20) }), 1),
			figures.Spread(column(rs, func(r result) float64 { return float64(r.writeBytes) / 1e6 }), 0),
			dups)
	}
}
