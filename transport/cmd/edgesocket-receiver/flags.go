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
	faults        ingress.Faults
	faultQFms     int
	faultDelayMs  int
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
