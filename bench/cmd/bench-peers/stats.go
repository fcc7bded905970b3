package main

import (
	"fmt"
	"io"

	"github.com/edge-agent/edge-agent/bench/internal/figures"
)

// result is one run of one row. Negative figures are unknown.
type result struct {
	ok    bool
	lines int     // lines the sink had to receive
	wall  float64 // seconds from the peer's start to the last wanted line
	cpu   float64 // the peer's CPU seconds, every thread
	hwm   int64   // the peer's peak RSS, bytes
	note  string
}

// column collects f over the runs that reached their count.
func column(rs []result, f func(result) float64) []float64 {
	return figures.Column(rs, func(r result) bool { return r.ok }, f)
}

// printTable prints one line per row. lines/s and CPU-s per 1M lines
// count the generated lines (n), the same work for every row, whether or
// not the chain dropped them.
func printTable(w io.Writer, n int, order []row, all map[string][]result) {
	fmt.Fprintf(w, "%-20s %5s %9s %24s %22s %20s %20s\n", "row", "ok", "delivered", "lines/s", "CPU s per 1M lines", "peak RSS MiB", "wall s")
	for _, r := range order {
		rs := all[r.name]
		ok, lines := 0, 0
		for _, x := range rs {
			if x.ok {
				ok++
			}
			lines = max(lines, x.lines)
		}
		fmt.Fprintf(w, "%-20s %2d/%-2d %9d %24s %22s %20s %20s\n", r.name, ok, len(rs), lines,
			figures.Spread(column(rs, func(x result) float64 { return float64(n) / x.wall }), 0),
			figures.Spread(column(rs, func(x result) float64 { return x.cpu / float64(n) * 1e6 }), 2),
			figures.Spread(column(rs, func(x result) float64 { return float64(x.hwm) / (1 << 20) }), 1),
			figures.Spread(column(rs, func(x result) float64 { return x.wall }), 2))
	}
}
