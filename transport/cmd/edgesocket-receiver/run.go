package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// flushInterval bounds how stale the output file may be for a reader
// tailing it.
const flushInterval = 100 * time.Millisecond

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWithClock(ctx, args, stdout, stderr, nil)
}

// modelClock drives the engine model's time in tests; nil means real
// time.
type modelClock struct {
	start time.Time
	ticks <-chan time.Time
}

// runWithClock is run with the engine model's time given by clock.
func runWithClock(ctx context.Context, args []string, stdout, stderr io.Writer, clock *modelClock) int {
	o, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: %v (see --help)\n", err)
		return exitUsage
	}
	if o.showVersion {
		printVersion(stdout)
		return exitOK
	}
	level := slog.LevelInfo
	if o.quiet {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	out := stdout
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "edgesocket-receiver: --out: %v\n", err)
			return exitError
		}
		defer f.Close()
		out = f
	}
	if o.model.enabled {
		return runModel(ctx, o, newSink(out, o.format == "envelope", 0), clock, log, stderr)
	}
	cfg, err := o.standinConfig(log)
	if err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: %v\n", err)
		return exitUsage
	}
	sk := newSink(out, o.format == "envelope", o.exitAfter)
	var srv *standin.Server
	cfg.Handler = func(id int64, record []byte) {
		sk.take(id, record)
		if sk.isFull() {
			// Past --exit-after: every later batch is refused without
			// charging the collector an attempt, before the model accepts
			// it, so nothing is acknowledged that was not written.
			srv.SetFaults(standin.Faults{BatchReply: protocol.QueueFull(time.Second)})
		}
	}
	srv, err = standin.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: %v\n", err)
		return exitUsage
	}
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: %v\n", err)
		return exitError
	}
	if code := announce(stderr, o, srv, "listening"); code != exitOK {
		return code
	}
	code := serveUntilDone(ctx, o, srv, sk, stderr)
	_ = srv.Close() // lets the last replies go out
	if err := sk.flush(); err != nil {
		fmt.Fprintf(stderr, "edgesocket-receiver: write output: %v\n", err)
		code = exitError
	}
	records, unique, dups := sk.counts()
	fmt.Fprintf(stderr, "edgesocket-receiver: done records=%d unique_batch_ids=%d duplicate_batch_ids=%d\n", records, unique, dups)
	return code
}

// serveUntilDone flushes and reports until a signal or --exit-after.
func serveUntilDone(ctx context.Context, o *options, srv *standin.Server, sk *sink, stderr io.Writer) int {
	flush := time.NewTicker(flushInterval)
	defer flush.Stop()
	var statsC <-chan time.Time
	if o.statsInterval > 0 {
		t := time.NewTicker(o.statsInterval)
		defer t.Stop()
		statsC = t.C
	}
	stats := newStatsReporter(time.Now())
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case <-sk.full:
			return exitOK
		case <-flush.C:
			if err := sk.flush(); err != nil {
				fmt.Fprintf(stderr, "edgesocket-receiver: write output: %v\n", err)
				return exitError
			}
		case now := <-statsC:
			var snap statsSnapshot
			snap.records, snap.unique, snap.dups = sk.counts()
			snap.server = srv.Stats()
			stats.report(stderr, now, snap)
		}
	}
}

// standinConfig builds the server config from the flags.
func (o *options) standinConfig(log *slog.Logger) (standin.Config, error) {
	cfg := standin.Config{Addr: o.listen, Token: o.token, Logger: log, Faults: o.faults}
	mode, _ := codec.ParseMode(o.packetMode) // checked in parseFlags
	if mode == codec.ModePacket {
		var key []byte
		if o.secretKey != "" {
			key, _ = codec.DecodeKey(o.secretKey) // checked in parseFlags
		}
		dec, err := codec.NewDecoder(mode, key)
		if err != nil {
			return cfg, err
		}
		cfg.Decoder = dec
	}
	if o.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return cfg, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	}
	return cfg, nil
}

// writeFileAtomic writes via a temporary file and a rename, so a reader
// polling for the file never sees it half written.
func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// listener is what announce needs of a started server.
type listener interface {
	Addr() string
	Close() error
}

// announce says where srv listens, in the line scripts and tests wait
// for, and writes --addr-file; on failure it closes srv and returns the
// exit code.
func announce(stderr io.Writer, o *options, srv listener, what string) int {
	fmt.Fprintf(stderr, "edgesocket-receiver: %s on %s\n", what, srv.Addr())
	if o.addrFile != "" {
		if err := writeFileAtomic(o.addrFile, srv.Addr()+"\n"); err != nil {
			_ = srv.Close()
			fmt.Fprintf(stderr, "edgesocket-receiver: --addr-file: %v\n", err)
			return exitError
		}
	}
	return exitOK
}
