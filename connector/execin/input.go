package execin

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
	"github.com/edge-agent/edge-agent/connector/internal/lines"
	"github.com/edge-agent/edge-agent/connector/internal/pushq"
	"github.com/edge-agent/edge-agent/transport/backoff"
	"github.com/edge-agent/edge-agent/transport/ratelog"
)

// Input is a running exec input. Open, Poll, Drain and Close are the
// scheduler's; one goroutine runs the command, reads its stdout into the
// queue, and waits between runs.
type Input struct {
	cfg    *Config
	log    *slog.Logger
	q      *pushq.Queue
	enc    lines.Encoder
	policy backoff.Policy
	stats  stats
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	warn   ratelog.Warner

	closeOnce sync.Once
}

// stats are the input's counters, in one place for status and metrics.
type stats struct {
	lines, bytes, truncated, invalid, parseErrors atomic.Int64
	// runs started, failures (start errors and non-zero exits), stderr
	// lines; lastExit is the last exit code (-1 before any, or killed).
	runs, failures, stderrLines atomic.Int64
	lastExit                    atomic.Int64
	running                     atomic.Bool
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
)

// NewFactory returns the factory for `type: exec`.
func NewFactory() input.Factory { return input.NewFactory(TypeName, NewDefaultConfig, New) }

// New checks cfg; nothing runs until Open.
func New(cfg *Config, set input.Settings) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := set.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Input{
		cfg: cfg, log: log.With(slog.String("command", filepath.Base(cfg.Command[0]))),
		q:      pushq.New(cfg.MaxPendingBytes),
		policy: backoff.Policy{Initial: cfg.RestartBackoff, Max: cfg.MaxRestartBackoff},
		done:   make(chan struct{}),
	}
	in.enc.JSON = cfg.Format == lines.FormatJSON
	in.stats.lastExit.Store(-1)
	return in, nil
}

// Open starts the command (at once, also when scheduled).
func (in *Input) Open(_ context.Context, _ input.OpenOptions) error {
	in.ctx, in.cancel = context.WithCancel(context.Background())
	go in.loop()
	return nil
}

// loop runs the command until Close: on its schedule, or again after each
// exit with backoff.
func (in *Input) loop() {
	defer close(in.done)
	failures := 0
	next := time.Now()
	for in.ctx.Err() == nil {
		started := time.Now()
		ok := in.run()
		if in.ctx.Err() != nil {
			return
		}
		var wait time.Duration
		if in.cfg.Interval > 0 {
			next = next.Add(in.cfg.Interval)
			if now := time.Now(); next.Before(now) {
				next = now // a run longer than the interval: no burst of catch-up runs
			}
			wait = time.Until(next)
		} else {
			if ok || time.Since(started) >= healthyRun {
				failures = 0
			}
			wait = in.policy.Jittered(failures)
			failures++
			in.log.Info("command exited; starting it again", slog.Duration("after", wait))
		}
		if backoff.Sleep(in.ctx, wait) != nil {
			return
		}
	}
}

// run runs the command once and reports whether it exited 0.
func (in *Input) run() bool {
	ctx := in.ctx
	if in.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.cfg.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, in.cfg.Command[0], in.cfg.Command[1:]...)
	cmd.Dir = in.cfg.Dir
	if len(in.cfg.Env) > 0 {
		cmd.Env = append(os.Environ(), in.cfg.Env...)
	}
	// Stopped by its PID: SIGTERM first, SIGKILL (and the pipes closed)
	// after stop-grace-ms.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = in.cfg.StopGrace
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return in.failed("cannot make the stdout pipe", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return in.failed("cannot make the stderr pipe", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return in.failed("cannot start the command", err)
	}
	in.stats.runs.Add(1)
	in.stats.running.Store(true)
	defer in.stats.running.Store(false)
	in.log.Debug("command started", slog.Int("pid", cmd.Process.Pid))
	var wg sync.WaitGroup
	wg.Go(func() { in.readStderr(stderr) })
	rerr := lines.Read(stdout, in.cfg.MaxLineBytes, func(l []byte, cut bool) error {
		in.stats.lines.Add(1)
		in.stats.bytes.Add(int64(len(l)))
		if cut {
			in.stats.truncated.Add(1)
		}
		ev := in.enc.Append(nil, l, time.Now())
		in.stats.invalid.Store(in.enc.Invalid)
		in.stats.parseErrors.Store(in.enc.ParseErrors)
		return in.q.Put(in.ctx, [][]byte{ev}, nil)
	})
	var werr error
	if rerr != nil {
		// Stopping (or the pipe failed): the rest of stdout is not
		// wanted. Wait stops the command (SIGTERM, then SIGKILL after
		// stop-grace-ms) and closes the pipes, which ends the stderr
		// reader.
		werr = cmd.Wait()
		wg.Wait()
	} else {
		wg.Wait() // stderr to its end before Wait closes it
		werr = cmd.Wait()
	}
	code := cmd.ProcessState.ExitCode()
	in.stats.lastExit.Store(int64(code))
	attrs := []any{slog.Int("pid", cmd.Process.Pid), slog.Int("exit_code", code), slog.Duration("ran", time.Since(start))}
	switch {
	case in.ctx.Err() != nil:
		in.log.Info("command stopped with the input", attrs...)
		return true
	case ctx.Err() != nil:
		in.stats.failures.Add(1)
		in.log.Warn("command ran past timeout-ms and was stopped", append(attrs, slog.Duration("timeout", in.cfg.Timeout))...)
		return false
	case werr != nil:
		in.stats.failures.Add(1)
		in.log.Warn("command failed", append(attrs, slog.Any("error", werr))...)
		return false
	}
	in.log.Info("command exited", attrs...)
	return true
}

func (in *Input) failed(what string, err error) bool {
	in.stats.failures.Add(1)
	in.log.Error(what, slog.Any("error", err))
	return false
}

// maxStderrLog is how much of a stderr line a log line shows.
const maxStderrLog = 512

// readStderr logs each stderr line (cut), at most one WARN per
// ratelog.DefaultEvery with the count held back.
func (in *Input) readStderr(r io.Reader) {
	_ = lines.Read(r, maxStderrLog, func(l []byte, _ bool) error {
		in.stats.stderrLines.Add(1)
		s, _ := jsonenc.AppendStringContent(nil, l)
		in.warn.Warn(in.log, "command wrote to stderr", slog.String("line", string(s)))
		return nil
	})
}

// Poll hands up to max lines to the scheduler, never waiting.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	return in.q.Poll(dst, max), nil
}

// Drain hands over every line read.
func (in *Input) Drain(dst []input.Event) []input.Event {
	return in.q.Drain(dst)
}

// Close stops the command (SIGTERM, SIGKILL after stop-grace-ms) and
// waits for it. Idempotent.
func (in *Input) Close() error {
	in.closeOnce.Do(func() {
		in.q.Stop()
		if in.cancel == nil {
			return
		}
		in.cancel()
		<-in.done
	})
	return nil
}

// Wakeup fires when lines were queued.
func (in *Input) Wakeup() <-chan struct{} { return in.q.Wakeup() }

// Stats: LinesRead stdout lines, Restarts the runs after the first,
// Errors failed starts and non-zero exits.
func (in *Input) Stats() input.Stats {
	s := &in.stats
	return input.Stats{
		LinesRead: s.lines.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(),
		TruncatedLines: s.truncated.Load(), InvalidSequences: s.invalid.Load(), ParseErrors: s.parseErrors.Load(),
		Restarts: max(s.runs.Load()-1, 0), Errors: s.failures.Load(),
	}
}
