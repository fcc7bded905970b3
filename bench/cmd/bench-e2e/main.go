// Command bench-e2e measures the built agent end to end on this machine:
// it generates N log lines, each with a sequence number, starts a sink
// (the ingress library, decoding PACKET and counting unique sequence
// numbers and duplicates) and bin/edge-agent, and prints one row per
// configuration with the median and min..max over the runs. A raw bbolt
// append loop, run in the same invocation, shows the WAL's efficiency as
// a ratio. `make bench-e2e` builds the agent and runs it; see
// docs/performance.md for the figures and how to read them.
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
	"strconv"
	"strings"
	"time"
)

// configNames are the rows, in order. Each is described in configHelp.
var configNames = []string{"raw-fsync", "json", "chain", "nosync", "if1", "packet", "packet-store", "rtt20", "rtt100", "model", "model-min", "checkpoint", "backlog", "bolt"}

// edgeConfigNames are the edge-conditions rows (`make bench-edge`), not run
// by default.
var edgeConfigNames = []string{"fsync3.5", "fsync10", "fsync30", "rtt600", "rtt20-packet", "rtt100-packet", "rtt600-packet"}

const configHelp = `raw-fsync  defaults: RAW, queue.fsync on
json       defaults on lines that are all JSON (the chain row's yardstick)
chain      defaults with the typical processor chain (parse json, a drop that
           matches none, redact e-mail and cards, set two fields) on lines
           that are all JSON
nosync     queue.fsync: false
if1        output.max-in-flight: 1 (the Java agent's exchange)
packet     PACKET, gzip (default level), aes_gcm; the sink decrypts and decodes
packet-store  the same with output.compression-level: 0 (stored in gzip framing)
rtt20      defaults through a proxy adding a 20 ms round trip (N is -rtt-n)
rtt100     the same with 100 ms
model      defaults into the engine model (its defaults: queue 1024, ratio 0.9, QUEUE_FULL:500,
           drain at its default ceiling, a checkpoint every second); a line
           counts once committed (N is -rtt-n)
model-min  the yardstick of the model row: a minimal pipelined client (window
           1,024, a line resent at once after QUEUE_FULL) into the same model
checkpoint the same with agent.delivery-guarantee: CHECKPOINT
backlog    -backlog-n rows queued while the sink refuses, then the drain is timed
bolt       a bare bbolt append loop: 200-byte records, bulk-max-size (256) per
           fsynced transaction, as the WAL's group commit; not the agent
Edge conditions, named only (make bench-edge):
fsync3.5   defaults with every fsync and fdatasync of the agent delayed 3.5 ms
           by strace's syscall fault injection (a slow consumer SSD)
fsync10    the same, 10 ms (eMMC, a good SD card)
fsync30    the same, 30 ms (a slow SD card)
rtt600     defaults through a proxy adding a 600 ms round trip (N is -rtt-n)
rtt20-packet, rtt100-packet, rtt600-packet
           the packet config through the same proxies (N is -rtt-n)`

type options struct {
	agent    string
	n        int
	rttN     int
	backlogN int
	runs     int
	configs  []string
	timeout  time.Duration
	keep     bool
	// pprofDir, when set, turns http.pprof on and saves a CPU profile of
	// each agent run there (pprofSeconds long, from the agent's start).
	pprofDir     string
	pprofSeconds int
	// flash: print the write-amplification table instead (flash_linux.go).
	flash       bool
	flashRates  []flashRate
	flashWindow time.Duration
	flashSettle time.Duration
}

func main() {
	o, err := parseFlags(os.Args[1:])
	switch {
	case err == nil && o.flash:
		err = runFlash(o)
	case err == nil:
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
}

// parseFlags reads the flags; N, RUNS and CONFIGS in the environment
// give their defaults, so `make bench-e2e N=100000` works.
func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-e2e", flag.ContinueOnError)
	o := options{}
	fs.StringVar(&o.agent, "agent", "bin/edge-agent", "the agent binary to measure")
	fs.IntVar(&o.n, "n", envInt("N", 1_000_000), "lines per run (env N)")
	fs.IntVar(&o.rttN, "rtt-n", envInt("RTT_N", 100_000), "lines per run of the rtt and model configs (env RTT_N)")
	fs.IntVar(&o.backlogN, "backlog-n", envInt("BACKLOG_N", 2_000_000), "rows of the backlog config (env BACKLOG_N)")
	fs.IntVar(&o.runs, "runs", envInt("RUNS", 3), "runs per config; each row shows the median and min..max (env RUNS)")
	configs := fs.String("configs", envString("CONFIGS", strings.Join(configNames, ",")), "comma-separated configs (env CONFIGS):\n"+configHelp)
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up a run after this long")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (agent logs, configs) for a look")
	fs.StringVar(&o.pprofDir, "pprof", envString("PPROF", ""), "save a CPU profile of each agent run in this directory, as <config>-<run>.pprof (env PPROF)")
	fs.IntVar(&o.pprofSeconds, "pprof-seconds", envInt("PPROF_SECONDS", 10), "length of each CPU profile, from the agent's start; a run waits for its profile before stopping the agent (env PPROF_SECONDS)")
	fs.BoolVar(&o.flash, "flash", false, "print the write-amplification table (disk bytes written per input byte at -flash-rates) instead")
	rates := fs.String("flash-rates", envString("FLASH_RATES", "1,10,100,10000,max"), "lines/s of each -flash row; max is -n lines as fast as the agent goes (env FLASH_RATES)")
	fs.DurationVar(&o.flashWindow, "flash-window", envDuration("FLASH_WINDOW", time.Minute), "how long each paced -flash row feeds the input (env FLASH_WINDOW)")
	fs.DurationVar(&o.flashSettle, "flash-settle", 6*time.Second, "wait after the last line was delivered, for its ack to be written, before the last sample")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	for _, r := range strings.Split(*rates, ",") {
		switch r = strings.TrimSpace(r); {
		case r == "max":
			o.flashRates = append(o.flashRates, flashRate{n: o.n})
		case r != "":
			v, err := strconv.Atoi(r)
			if err != nil || v < 1 || v > 1_000_000 {
				errs = append(errs, fmt.Errorf("-flash-rates: %q is neither max nor 1..1000000 lines/s", r))
			}
			o.flashRates = append(o.flashRates, flashRate{rate: v})
		}
	}
	if o.flashWindow < time.Second {
		errs = append(errs, fmt.Errorf("-flash-window must be at least 1s, got %v", o.flashWindow))
	}
	for _, c := range strings.Split(*configs, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !known(c) {
			errs = append(errs, fmt.Errorf("-configs: unknown config %q (known: %s)", c, strings.Join(append(configNames, edgeConfigNames...), ", ")))
		}
		o.configs = append(o.configs, c)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"-n", o.n}, {"-rtt-n", o.rttN}, {"-backlog-n", o.backlogN}, {"-runs", o.runs}, {"-pprof-seconds", o.pprofSeconds}} {
		if f.v < 1 || f.v > 999_999_999 {
			errs = append(errs, fmt.Errorf("%s must be 1..999999999, got %d", f.name, f.v))
		}
	}
	if len(o.configs) == 0 {
		errs = append(errs, errors.New("-configs: none given"))
	}
	return o, errors.Join(errs...)
}

func known(c string) bool {
	return slices.Contains(configNames, c) || slices.Contains(edgeConfigNames, c)
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(key))); err == nil {
		return v
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(strings.TrimSpace(os.Getenv(key))); err == nil {
		return v
	}
	return def
}

func envString(key, def string) string {
	if v := strings.TrimSpace(os.Getenv(key)); v != "" {
		return v
	}
	return def
}
