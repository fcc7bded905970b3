// Command bench-peers measures the agent beside the OpenTelemetry
// Collector on the same work: N generated JSON lines of about 200 bytes
// (as bench-processing makes them, each with a sequence number in its
// msg) are shipped durably by each peer, with no processors (plain) and
// with the typical chain (parse json, drop debug, redact e-mail and card
// numbers, set two fields), into a sink that counts every wanted line
// once: the stand-in EdgeSocket ingress for the agent, an OTLP/HTTP
// server that answers 200 after counting for the collector. A chain row
// fails when a debug line or a secret in clear arrives. It prints lines/s,
// CPU-s per 1M lines and peak RSS, median (min..max) of the runs.
// `make bench-peers` builds both peers and runs it; docs/performance.md
// has the figures.
//
// Linux only (it reads /proc); loopback only; every process it starts is
// stopped by its PID, and its data lives in a temporary directory it
// removes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// rowNames are the default rows, in order.
var rowNames = []string{"agent-plain", "otel-plain", "agent-chain", "otel-chain"}

// fsyncDelays are the edge-condition suffixes: every fsync and fdatasync
// of the peer delayed by strace's fault injection.
var fsyncDelays = map[string]time.Duration{"fsync10": 10 * time.Millisecond, "fsync30": 30 * time.Millisecond}

const rowHelp = `agent-plain  edge-agent, defaults (queue.fsync on), RAW EdgeSocket (peers/agent-plain.yaml)
agent-chain  the same with the typical chain (peers/agent-chain.yaml)
otel-plain   OpenTelemetry Collector, filelog -> persistent queue (file_storage, fsync) -> otlphttp (peers/otelcol-plain.yaml)
otel-chain   the same with transform, filter, redaction, attributes (peers/otelcol-chain.yaml)
A row name with -fsync10 or -fsync30 appended runs that peer with every fsync and fdatasync
delayed 10 or 30 ms by strace's syscall fault injection (make bench-peers-edge).`

// row is one parsed row name.
type row struct {
	name  string
	peer  string // agent or otel
	chain bool
	delay time.Duration // fsync delay; 0 for none
}

func parseRow(name string) (row, error) {
	r := row{name: name}
	base, suffix, _ := strings.Cut(name, "-fsync")
	if suffix != "" {
		d, ok := fsyncDelays["fsync"+suffix]
		if !ok {
			return r, fmt.Errorf("row %q: fsync delay must be one of -fsync10, -fsync30", name)
		}
		r.delay = d
	}
	peer, kind, ok := strings.Cut(base, "-")
	if !ok || (peer != "agent" && peer != "otel") || (kind != "plain" && kind != "chain") {
		return r, fmt.Errorf("row %q: want agent-plain, agent-chain, otel-plain or otel-chain, optionally with -fsync10 or -fsync30", name)
	}
	r.peer, r.chain = peer, kind == "chain"
	return r, nil
}

// templateName is the file in the peers directory that row r's config
// is made from.
func templateName(r row) string {
	peer := map[string]string{"agent": "agent-", "otel": "otelcol-"}[r.peer]
	if r.chain {
		return peer + "chain.yaml"
	}
	return peer + "plain.yaml"
}

type options struct {
	agent    string
	otelcol  string
	peersDir string
	n        int
	runs     int
	rows     []row
	timeout  time.Duration
	keep     bool
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-peers:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-peers", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.agent, "agent", "../bin/edge-agent", "the agent binary")
	fs.StringVar(&o.otelcol, "otelcol", "../build/otelcol/otelcol-peers", "the collector binary (make otelcol)")
	fs.StringVar(&o.peersDir, "peers", "peers", "the directory of the peers' config templates")
	fs.IntVar(&o.n, "n", 300_000, "lines per run")
	fs.IntVar(&o.runs, "runs", 3, "runs per row; each row shows the median and min..max")
	rows := fs.String("rows", strings.Join(rowNames, ","), "comma-separated rows:\n"+rowHelp)
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up a run after this long")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (configs, logs) for a look")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if o.n < 1 || o.n > 999_999_999 {
		errs = append(errs, fmt.Errorf("-n must be 1..999999999, got %d", o.n))
	}
	if o.runs < 1 || o.runs > 100 {
		errs = append(errs, fmt.Errorf("-runs must be 1..100, got %d", o.runs))
	}
	for name := range strings.SplitSeq(*rows, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		r, err := parseRow(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("-rows: %w", err))
			continue
		}
		if !slices.ContainsFunc(o.rows, func(x row) bool { return x.name == r.name }) {
			o.rows = append(o.rows, r)
		}
	}
	if len(o.rows) == 0 {
		errs = append(errs, errors.New("-rows: none given"))
	}
	return o, errors.Join(errs...)
}
