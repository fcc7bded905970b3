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
	"github.com/edge-agent/edge-agent/transport/ingress"
)

// options are the parsed command line.
type options struct {
	listen        string
	token         string
	tokenFile     string
	packetMode    string
	secretKey     string
	out           string
	format        string
	exitAfter     int
	statsInterval time.Duration
	tlsCert       string
	tlsKey        string
	quiet         bool
	addrFile      string
	faults        ingress.Faults
	faultQFms     int
	faultDelayMs  int
}

const usageText = `edgesocket-receiver: a stand-in for the SeaTunnel EdgeSocket source.

It accepts one EdgeSocket collector at a time (others get REJECTED), checks
its token, decodes each __BATCH__ payload (RAW or PACKET) and writes every
record as one NDJSON line. A running count goes to stderr every
--stats-interval; at exit a summary line follows:

  edgesocket-receiver: done records=N unique_batch_ids=U duplicate_batch_ids=D

Usage:
  edgesocket-receiver --token T [flags]

Examples:
  # RAW records to stdout, as the agent's default output mode sends them
  edgesocket-receiver --listen 127.0.0.1:9999 --token secret

  # PACKET mode with AES-GCM, each record wrapped with its batch id
  edgesocket-receiver --token-file token.txt --packet-mode packet \
      --secret-key "$(cat aes.key)" --format envelope --out records.ndjson

  # a flaky engine: cut every 100th batch, RETRY every 7th, slow replies
  edgesocket-receiver --token secret --fault-cut-after 100 \
      --fault-retry-every 7 --fault-delay-ms 5

  # take 1000 records and exit 0 (for scripts)
  edgesocket-receiver --token secret --exit-after 1000 --out got.ndjson

Flags:
`

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("edgesocket-receiver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9999", "`host:port` to listen on (the engine binds 0.0.0.0)")
	fs.StringVar(&o.token, "token", "", "auth `token` the collector must send (or use --token-file)")
	fs.StringVar(&o.tokenFile, "token-file", "", "read the token from `file` (trailing newline ignored)")
	fs.StringVar(&o.packetMode, "packet-mode", "raw", "payload framing: raw or packet")
	fs.StringVar(&o.secretKey, "secret-key", "", "base64 of the 32-byte AES key for encrypted packets (packet mode)")
	fs.StringVar(&o.out, "out", "", "append records to `file` (default stdout)")
	fs.StringVar(&o.format, "format", "payload", "record line: payload (the record itself) or envelope ({\"batch_id\":N,\"payload\":...})")
	fs.IntVar(&o.exitAfter, "exit-after", 0, "exit 0 after writing `N` records (0: run until SIGINT/SIGTERM)")
	fs.DurationVar(&o.statsInterval, "stats-interval", time.Second, "how often to print the running count to stderr (0: never)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve TLS with this PEM certificate `file` (the engine speaks plain TCP)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM key `file` for --tls-cert")
	fs.BoolVar(&o.quiet, "quiet", false, "log only warnings and errors")
	fs.StringVar(&o.addrFile, "addr-file", "", "write the bound host:port to `file` once listening (useful with --listen 127.0.0.1:0)")
	fs.IntVar(&o.faults.CutAfter, "fault-cut-after", 0, "close the connection without a reply after every `N`th batch (the record is kept: a duplicate follows)")
	fs.IntVar(&o.faults.RetryEvery, "fault-retry-every", 0, "reply RETRY to every `N`th batch")
	fs.IntVar(&o.faults.QueueFullEvery, "fault-queue-full-every", 0, "reply QUEUE_FULL to every `N`th batch")
	fs.IntVar(&o.faultQFms, "fault-queue-full-ms", 500, "delay in `ms` put in QUEUE_FULL replies")
	fs.IntVar(&o.faultDelayMs, "fault-delay-ms", 0, "wait `ms` before each batch reply")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	o.faults.QueueFullDelay = time.Duration(o.faultQFms) * time.Millisecond
	o.faults.ReplyDelay = time.Duration(o.faultDelayMs) * time.Millisecond
	return o, o.check()
}

// check validates and resolves the token.
func (o *options) check() error {
	var errs []error
	if o.tokenFile != "" {
		if o.token != "" {
			errs = append(errs, errors.New("--token and --token-file exclude each other"))
		}
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--token-file: %w", err))
		}
		o.token = strings.TrimRight(string(b), "\r\n")
	}
	if o.token == "" {
		errs = append(errs, errors.New("a token is required: --token T or --token-file FILE"))
	}
	if _, err := codec.ParseMode(o.packetMode); err != nil {
		errs = append(errs, fmt.Errorf("--packet-mode: %w", err))
	}
	if o.format != "payload" && o.format != "envelope" {
		errs = append(errs, fmt.Errorf("--format %q: want payload or envelope", o.format))
	}
	if o.secretKey != "" {
		if _, err := codec.DecodeKey(o.secretKey); err != nil {
			errs = append(errs, fmt.Errorf("--secret-key: %w", err))
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
