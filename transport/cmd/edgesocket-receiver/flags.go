package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// options are the parsed command line.
type options struct {
	listen        string
	token         string
	tokenFile     string
	packetMode    string
	secretKey     string
	secretKeyFile string
	out           string
	format        string
	exitAfter     int
	statsInterval time.Duration
	tlsCert       string
	tlsKey        string
	quiet         bool
	showVersion   bool
	addrFile      string
	faults        standin.Faults
	faultQFms     int
	faultDelayMs  int
	model         modelOptions
}

// modelOptions are the engine-model mode's flags.
type modelOptions struct {
	enabled            bool
	checkpointInterval time.Duration
	abortEvery         int
	failoverEvery      time.Duration
	restartFreshEvery  time.Duration
	queueCapacity      int
	queueRatio         float64
	queueFullMs        int
	drainRate          float64
	acceptTimeout      time.Duration
	logCommits         bool
}

const usageText = `edgesocket-receiver: a stand-in for the SeaTunnel EdgeSocket source.

It accepts one EdgeSocket collector at a time (others get REJECTED), checks
its token, decodes each __BATCH__ payload (RAW or PACKET) and writes every
record as one NDJSON line. A running count goes to stderr every
--stats-interval (skipped when nothing changed since the last one); at exit
a summary line follows:

  edgesocket-receiver: done records=N unique_batch_ids=U duplicate_batch_ids=D

Usage:
  edgesocket-receiver --token T [flags]
  edgesocket-receiver --version

Examples:
  # RAW records to stdout, as the agent's default output mode sends them
  edgesocket-receiver --listen 127.0.0.1:9999 --token secret

  # PACKET mode with AES-GCM, each record wrapped with its batch id
  edgesocket-receiver --token-file token.txt --packet-mode packet \
      --secret-key-file aes.key --format envelope --out records.ndjson

  # a flaky engine: cut every 100th batch, RETRY every 7th, slow replies
  edgesocket-receiver --token secret --fault-cut-after 100 \
      --fault-retry-every 7 --fault-delay-ms 5

  # take 1000 records and exit 0 (for scripts)
  edgesocket-receiver --token secret --exit-after 1000 --out got.ndjson

  # the engine as it really behaves: a queue with QUEUE_FULL, __COMMIT__
  # answered from checkpoints, only committed rows written, a failover to
  # the last checkpoint every 30s, each commit and its reply logged
  edgesocket-receiver --token secret --engine-model --out committed.ndjson \
      --checkpoint-interval 1s --failover-every 30s --log-commits

Engine-model mode (--engine-model) runs an exact model of the engine's
EdgeSocket source and a job around it instead of the stand-in: one
collector at a time with the port closed while it is connected (a second
connect is refused), replies as the engine gives them (RECEIVED,
QUEUE_FULL:<ms>, RETRY, and PENDING / ACK:<watermark> / RETRY / RESEND to
__COMMIT__), a sink draining the queue at --drain-rate rows/s, and
checkpoints every --checkpoint-interval. --out receives only committed
rows, when their checkpoint completes; rows not yet committed at a
failover, a fresh restart or exit are lost, as in the engine. The summary
line at exit adds the model's figures:
  ... committed=N checkpoints=C aborted_checkpoints=A failovers=F
  fresh_restarts=R lost_open_tx=L lost_queued=Q queue_full=QF
  commit_ack=.. commit_pending=.. commit_retry=.. commit_resend=..
The model-only flags below need --engine-model; the fault flags, TLS and
--exit-after do not apply to it.

Flags:
`

// parseFlags parses and checks the command line. --help writes the usage
// to stdout and returns flag.ErrHelp; --version returns options with
// showVersion set and nothing else checked, so neither needs a token.
func parseFlags(args []string, stdout io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("edgesocket-receiver", flag.ContinueOnError)
	// The flag package would print a bad flag and then the whole usage on
	// its output; run reports the error once, on one line, instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9999", "`host:port` to listen on (the engine binds 0.0.0.0)")
	fs.StringVar(&o.token, "token", "", "auth `token` the collector must send (or use --token-file)")
	fs.StringVar(&o.tokenFile, "token-file", "", "read the token from `file` (trailing newline ignored)")
	fs.StringVar(&o.packetMode, "packet-mode", "raw", "payload framing: raw or packet")
	fs.StringVar(&o.secretKey, "secret-key", "", "base64 of the 32-byte AES key for encrypted packets (packet mode; visible in ps, prefer --secret-key-file)")
	fs.StringVar(&o.secretKeyFile, "secret-key-file", "", "read the base64 AES key from `file` (surrounding whitespace ignored)")
	fs.StringVar(&o.out, "out", "", "append records to `file` (default stdout)")
	fs.StringVar(&o.format, "format", "payload", "record line: payload (the record itself) or envelope ({\"batch_id\":N,\"payload\":...})")
	fs.IntVar(&o.exitAfter, "exit-after", 0, "exit 0 after writing `N` records (0: run until SIGINT/SIGTERM)")
	fs.DurationVar(&o.statsInterval, "stats-interval", time.Second, "how often to print the running count to stderr (0: never)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve TLS with this PEM certificate `file` (the engine speaks plain TCP)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM key `file` for --tls-cert")
	fs.BoolVar(&o.quiet, "quiet", false, "log only warnings and errors")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.StringVar(&o.addrFile, "addr-file", "", "write the bound host:port to `file` once listening (useful with --listen 127.0.0.1:0)")
	fs.IntVar(&o.faults.CutAfter, "fault-cut-after", 0, "close the connection without a reply after every `N`th batch (the record is kept: a duplicate follows)")
	fs.IntVar(&o.faults.RetryEvery, "fault-retry-every", 0, "reply RETRY to every `N`th batch")
	fs.IntVar(&o.faults.QueueFullEvery, "fault-queue-full-every", 0, "reply QUEUE_FULL to every `N`th batch")
	fs.IntVar(&o.faultQFms, "fault-queue-full-ms", 500, "delay in `ms` put in QUEUE_FULL replies")
	fs.IntVar(&o.faultDelayMs, "fault-delay-ms", 0, "wait `ms` before each batch reply")
	m := &o.model
	fs.BoolVar(&m.enabled, "engine-model", false, "run the engine model instead of the stand-in (see above)")
	fs.DurationVar(&m.checkpointInterval, "checkpoint-interval", 500*time.Millisecond, "engine model: time between checkpoints (0: checkpointing off, nothing is ever committed)")
	fs.IntVar(&m.abortEvery, "abort-checkpoint-every", 0, "engine model: abort every `N`th checkpoint (0: none)")
	fs.DurationVar(&m.failoverEvery, "failover-every", 0, "engine model: restore the last completed checkpoint every `D`, dropping the collector (0: never)")
	fs.DurationVar(&m.restartFreshEvery, "restart-fresh-every", 0, "engine model: kill and start the job again with no state every `D` (0: never)")
	fs.IntVar(&m.queueCapacity, "queue-capacity", enginemodel.DefaultQueueCapacity, "engine model: local_queue_capacity, records")
	fs.Float64Var(&m.queueRatio, "queue-ratio", enginemodel.DefaultQueueRatio, "engine model: queue_backpressure_watermark_ratio; QUEUE_FULL from ceil(capacity*ratio) records")
	fs.IntVar(&m.queueFullMs, "queue-full-retry-after-ms", enginemodel.DefaultQueueFullRetryAfterMs, "engine model: queue_full_retry_after_ms, the `ms` in QUEUE_FULL replies")
	fs.Float64Var(&m.drainRate, "drain-rate", enginemodel.DefaultDrainRate, "engine model: rows per second the job's sink takes from the queue")
	fs.DurationVar(&m.acceptTimeout, "accept-timeout", time.Second, "engine model: accept_timeout_ms, the wait for the auth line")
	fs.BoolVar(&m.logCommits, "log-commits", false, "engine model: log each __COMMIT__ and its reply at INFO on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// Asked for, so it is output, not a diagnostic: it pipes into less.
			fmt.Fprint(stdout, usageText)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if o.showVersion {
		return o, nil
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	o.faults.QueueFullDelay = time.Duration(o.faultQFms) * time.Millisecond
	o.faults.ReplyDelay = time.Duration(o.faultDelayMs) * time.Millisecond
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return o, errors.Join(o.check(), o.model.check(set))
}

// modelOnly are the flags that mean nothing without --engine-model;
// notForModel are the stand-in's flags the model does not honour.
var (
	modelOnly = []string{"checkpoint-interval", "abort-checkpoint-every", "failover-every", "restart-fresh-every",
		"queue-capacity", "queue-ratio", "queue-full-retry-after-ms", "drain-rate", "accept-timeout", "log-commits"}
	notForModel = []string{"fault-cut-after", "fault-retry-every", "fault-queue-full-every", "fault-queue-full-ms",
		"fault-delay-ms", "tls-cert", "tls-key", "exit-after"}
)

// check validates the engine-model flags; set names the flags given.
func (m *modelOptions) check(set map[string]bool) error {
	var errs []error
	if !m.enabled {
		for _, name := range modelOnly {
			if set[name] {
				errs = append(errs, fmt.Errorf("--%s needs --engine-model", name))
			}
		}
		return errors.Join(errs...)
	}
	for _, name := range notForModel {
		if set[name] {
			errs = append(errs, fmt.Errorf("--%s does not apply to --engine-model", name))
		}
	}
	// The engine's own option checks, under the flags' names.
	if m.queueCapacity <= 0 {
		errs = append(errs, fmt.Errorf("--queue-capacity %d: must be > 0", m.queueCapacity))
	}
	if !(m.queueRatio > 0 && m.queueRatio <= 1) {
		errs = append(errs, fmt.Errorf("--queue-ratio %v: must be in (0, 1]", m.queueRatio))
	}
	if m.queueFullMs <= 0 {
		errs = append(errs, fmt.Errorf("--queue-full-retry-after-ms %d: must be > 0", m.queueFullMs))
	}
	if !(m.drainRate > 0) {
		errs = append(errs, fmt.Errorf("--drain-rate %v: must be > 0", m.drainRate))
	}
	if m.acceptTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--accept-timeout %v: must be > 0", m.acceptTimeout))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--checkpoint-interval", m.checkpointInterval}, {"--failover-every", m.failoverEvery}, {"--restart-fresh-every", m.restartFreshEvery}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v: must not be negative", d.name, d.v))
		}
	}
	if m.abortEvery < 0 {
		errs = append(errs, fmt.Errorf("--abort-checkpoint-every %d: must not be negative", m.abortEvery))
	}
	return errors.Join(errs...)
}

// check validates and resolves the token.
func (o *options) check() error {
	var errs []error
	if o.tokenFile != "" {
		if o.token != "" {
			errs = append(errs, errors.New("--token and --token-file exclude each other"))
		}
		b, err := os.ReadFile(o.tokenFile)
		o.token = strings.TrimRight(string(b), "\r\n")
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--token-file: %w", err))
		case o.token == "":
			errs = append(errs, fmt.Errorf("--token-file %s: empty", o.tokenFile))
		}
	} else if o.token == "" {
		errs = append(errs, errors.New("a token is required: --token T or --token-file FILE"))
	}
	if _, err := codec.ParseMode(o.packetMode); err != nil {
		errs = append(errs, fmt.Errorf("--packet-mode: %w", err))
	}
	if o.format != "payload" && o.format != "envelope" {
		errs = append(errs, fmt.Errorf("--format %q: want payload or envelope", o.format))
	}
	keyFlag := "--secret-key"
	if o.secretKeyFile != "" {
		keyFlag = "--secret-key-file"
		if o.secretKey != "" {
			errs = append(errs, errors.New("--secret-key and --secret-key-file exclude each other"))
		}
		b, err := os.ReadFile(o.secretKeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--secret-key-file: %w", err))
		}
		o.secretKey = strings.TrimSpace(string(b))
	}
	if o.secretKey != "" {
		if _, err := codec.DecodeKey(o.secretKey); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", keyFlag, err))
		}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	counts := []struct {
		name string
		v    int
	}{
		{"--exit-after", o.exitAfter}, {"--fault-cut-after", o.faults.CutAfter},
		{"--fault-retry-every", o.faults.RetryEvery}, {"--fault-queue-full-every", o.faults.QueueFullEvery},
		{"--fault-queue-full-ms", o.faultQFms}, {"--fault-delay-ms", o.faultDelayMs},
	}
	for _, c := range counts {
		if c.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d: must not be negative", c.name, c.v))
		}
	}
	if o.statsInterval < 0 {
		errs = append(errs, fmt.Errorf("--stats-interval %v: must not be negative", o.statsInterval))
	}
	return errors.Join(errs...)
}
