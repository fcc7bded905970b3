// Command bench-relay measures edge-agent as a relay on this machine: N
// simulated collectors (the transport client library, pipelined, one
// connection and one token each) send to the built agent running a
// `type: edgesocket` input with queue.fsync on, whose output delivers to a
// sink (the stand-in library, counting). It prints aggregate lines/s (what
// the relay answered RECEIVED, i.e. stored), what reached the sink, the
// relay's CPU seconds per million lines, its peak RSS and RSS per idle
// connection, and fairness: the slowest collector's share of the mean.
// `make bench-relay` builds the agent and runs it.
//
// Linux only (it reads /proc); loopback only; it stops the agent it starts
// by its PID and removes its temporary directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

type options struct {
	agent      string
	collectors int
	duration   time.Duration
	warmup     time.Duration
	batch      int
	inFlight   int
	lineBytes  int
	keep       bool
	pprof      string
	memLimit   string
	receiver   string
	bulk       int
	maxBytes   int64
}

func main() {
	var o options
	fs := flag.NewFlagSet("bench-relay", flag.ExitOnError)
	fs.StringVar(&o.agent, "agent", "../bin/edge-agent", "the built edge-agent binary")
	fs.IntVar(&o.collectors, "collectors", 1000, "simulated collectors, one connection and token each")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "measured window, after the warm-up")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "load before the window opens")
	fs.IntVar(&o.batch, "batch", 16, "batches per Send call of a collector (each batch is one line)")
	fs.IntVar(&o.inFlight, "in-flight", 128, "each collector's pipelining window (client max-in-flight)")
	fs.IntVar(&o.lineBytes, "line-bytes", 200, "bytes per line")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory")
	fs.StringVar(&o.memLimit, "gomemlimit", "", "GOMEMLIMIT for the relay (default: the agent's own soft limit, 48 MiB)")
	fs.StringVar(&o.receiver, "sink-receiver", "", "run the sink as this edgesocket-receiver binary, a process of its own (default: in this process, sharing its CPU with the collectors)")
	fs.IntVar(&o.bulk, "bulk-max-size", 0, "the relay's agent.bulk-max-size (0: the agent's default)")
	fs.Int64Var(&o.maxBytes, "queue-max-bytes", 0, "the relay's queue.max-bytes (0: the agent's default); a small bound shows the rate it sustains once its queue is full, when collectors get QUEUE_FULL")
	fs.StringVar(&o.pprof, "pprof", "", "save a CPU profile of the relay over the window to this file")
	_ = fs.Parse(os.Args[1:])
	if o.collectors < 1 || o.batch < 1 || o.inFlight < 1 || o.lineBytes < 40 || o.duration <= 0 || o.maxBytes < 0 {
		fmt.Fprintln(os.Stderr, "bench-relay: -collectors, -batch, -in-flight must be > 0, -line-bytes >= 40, -duration > 0, -queue-max-bytes >= 0")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-relay:", err)
		os.Exit(1)
	}
}
