// Package stdin is the `type: stdin` input: the agent's standard input,
// line by line, one event per line.
//
// Contract:
//
//   - A reader goroutine puts each line into a queue bounded in bytes
//     (max-pending-bytes); when it is full the goroutine waits, the pipe
//     fills, and the writer blocks: backpressure, nothing dropped.
//   - At EOF the input has nothing more to read and says so once (INFO);
//     the agent keeps running its other inputs.
//   - No position and no acknowledgement exists on a pipe: a crash loses
//     the lines read and not yet in the WAL, and the lines still in the
//     pipe. A stop (Drain) stores every line read.
package stdin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/lines"
	"github.com/edge-agent/edge-agent/connector/internal/pushq"
)

// TypeName is the `input.type` value of this input.
const TypeName = "stdin"

// Defaults and limits: the one place each is written.
const (
	DefaultMaxLineBytes    = 1 << 20
	DefaultMaxPendingBytes = 4 << 20
)

// Config is the `input` section for `type: stdin`; yaml tags are the keys.
type Config struct {
	// Format: text (default: each line is "message") or json (a line that
	// is a JSON object is the event; others as text with parse_error).
	Format string `yaml:"format"`
	// MaxLineBytes cuts longer lines (counted). Default 1 MiB.
	MaxLineBytes int `yaml:"max-line-bytes"`
	// MaxPendingBytes bounds the lines read and not yet in the WAL.
	// Default 4 MiB.
	MaxPendingBytes int `yaml:"max-pending-bytes"`
	_               struct{}
}

// NewDefaultConfig returns the defaults; agent.yaml is decoded on top.
func NewDefaultConfig() *Config {
	return &Config{Format: lines.FormatText, MaxLineBytes: DefaultMaxLineBytes, MaxPendingBytes: DefaultMaxPendingBytes}
}

// Validate reports every problem at once; each is an *input.FieldError.
func (c *Config) Validate() error {
	var errs []error
	if c.Format != lines.FormatText && c.Format != lines.FormatJSON {
		errs = append(errs, input.Errorf("format", "must be %s or %s, got %q", lines.FormatText, lines.FormatJSON, c.Format))
	}
	if c.MaxLineBytes < 64 || c.MaxLineBytes > 64<<20 {
		errs = append(errs, input.Errorf("max-line-bytes", "must be between 64 and %d, got %d", 64<<20, c.MaxLineBytes))
	}
	if c.MaxPendingBytes < max(64<<10, c.MaxLineBytes) || c.MaxPendingBytes > 1<<30 {
		errs = append(errs, input.Errorf("max-pending-bytes", "must be between %d (and max-line-bytes) and %d, got %d", 64<<10, 1<<30, c.MaxPendingBytes))
	}
	return errors.Join(errs...)
}

// Sources names what the input reads.
func (c *Config) Sources() []string { return []string{"stdin"} }

// NewFactory returns the factory for `type: stdin`.
func NewFactory() input.Factory {
	return input.NewFactory(TypeName, NewDefaultConfig, func(c *Config, set input.Settings) (*Input, error) {
		return New(c, set, os.Stdin)
	})
}

// Input is a running stdin input.
type Input struct {
	cfg    *Config
	log    *slog.Logger
	r      io.Reader
	q      *pushq.Queue
	enc    lines.Encoder
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	eof    atomic.Bool
	stats  struct {
		lines, bytes, truncated, invalid, parseErrors atomic.Int64
	}
	closeOnce sync.Once
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
)

// New reads r (the factory passes os.Stdin).
func New(cfg *Config, set input.Settings, r io.Reader) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := set.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Input{cfg: cfg, log: log, r: r, q: pushq.New(cfg.MaxPendingBytes), done: make(chan struct{})}
	in.enc.JSON = cfg.Format == lines.FormatJSON
	return in, nil
}

// Open starts reading.
func (in *Input) Open(_ context.Context, _ input.OpenOptions) error {
	in.ctx, in.cancel = context.WithCancel(context.Background())
	go in.read()
	return nil
}

func (in *Input) read() {
	defer close(in.done)
	err := lines.Read(in.r, in.cfg.MaxLineBytes, func(l []byte, cut bool) error {
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
	switch {
	case err == nil:
		in.eof.Store(true)
		in.log.Info("stdin reached its end; the agent's other inputs go on", slog.Int64("lines", in.stats.lines.Load()))
	case errors.Is(err, pushq.ErrClosed), errors.Is(err, context.Canceled):
	default:
		in.log.Error("stdin read failed; nothing more is read from it", slog.Any("error", err))
	}
}

// Poll hands up to max lines to the scheduler, never waiting.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	return in.q.Poll(dst, max), nil
}

// Drain hands over every line read.
func (in *Input) Drain(dst []input.Event) []input.Event {
	return in.q.Drain(dst)
}

// Close stops taking lines and interrupts a read in progress where the
// reader allows it (a deadline); otherwise the reader goroutine ends at
// its next line or at EOF, and that one line is not stored: a reload that
// rebuilds a stdin input may lose the line it was waiting for.
// Idempotent.
func (in *Input) Close() error {
	in.closeOnce.Do(func() {
		in.q.Stop()
		if in.cancel != nil {
			in.cancel()
		}
		if d, ok := in.r.(interface{ SetReadDeadline(time.Time) error }); ok {
			_ = d.SetReadDeadline(time.Now())
		}
	})
	return nil
}

// Wakeup fires when lines were queued.
func (in *Input) Wakeup() <-chan struct{} { return in.q.Wakeup() }

// Stats: LinesRead lines, BytesRead their bytes, TruncatedLines the cut
// ones.
func (in *Input) Stats() input.Stats {
	s := &in.stats
	return input.Stats{
		LinesRead: s.lines.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(),
		TruncatedLines: s.truncated.Load(), InvalidSequences: s.invalid.Load(), ParseErrors: s.parseErrors.Load(),
	}
}

// EOF reports whether stdin reached its end.
func (in *Input) EOF() bool { return in.eof.Load() }
