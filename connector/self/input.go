package self

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/pushq"
)

// TypeName is the `input.type` value of this input.
const TypeName = "self"

// Defaults and limits: the one place each is written.
const (
	DefaultLevel           = "warn"
	DefaultMaxPendingBytes = 1 << 20
	minPendingBytes        = 16 << 10
	maxPendingBytes        = 64 << 20
)

// Config is the `input` section for `type: self`; yaml tags are the keys.
type Config struct {
	// Level is the lowest level shipped: debug, info, warn (default) or
	// error. It is independent of log.level.
	Level string `yaml:"level"`
	// MaxPendingBytes bounds the records logged and not yet in the WAL;
	// records that do not fit are dropped and counted. Default 1 MiB.
	MaxPendingBytes int `yaml:"max-pending-bytes"`
	_               struct{}
}

// NewDefaultConfig returns the defaults; agent.yaml is decoded on top.
func NewDefaultConfig() *Config {
	return &Config{Level: DefaultLevel, MaxPendingBytes: DefaultMaxPendingBytes}
}

// Validate reports every problem at once; each is an *input.FieldError.
func (c *Config) Validate() error {
	var errs []error
	if _, err := parseLevel(c.Level); err != nil {
		errs = append(errs, input.Errorf("level", "%w", err))
	}
	if c.MaxPendingBytes < minPendingBytes || c.MaxPendingBytes > maxPendingBytes {
		errs = append(errs, input.Errorf("max-pending-bytes", "must be between %d and %d, got %d", minPendingBytes, maxPendingBytes, c.MaxPendingBytes))
	}
	return errors.Join(errs...)
}

// Sources names what the input reads.
func (c *Config) Sources() []string { return []string{"the agent's own log"} }

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("must be debug, info, warn or error, got %q", s)
}

// ErrNoHub: the factory was built without the agent's log hub (a command
// that loads the config but runs no agent).
var ErrNoHub = errors.New("no agent log to read here: the self input runs only inside the agent")

// NewFactory returns the factory for `type: self`, reading hub (which the
// agent's logger is built around). A nil hub decodes and checks configs
// but creates no input.
func NewFactory(hub *Hub) input.Factory {
	return input.NewFactory(TypeName, NewDefaultConfig, func(c *Config, set input.Settings) (*Input, error) {
		if hub == nil {
			return nil, ErrNoHub
		}
		return New(c, set, hub)
	})
}

// Input is a running self input.
type Input struct {
	cfg    *Config
	level  slog.Level
	hub    *Hub
	q      *pushq.Queue
	detach func()
	stats  struct {
		records, bytes, dropped atomic.Int64
	}
	closeOnce sync.Once
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
	_ Sink                = (*Input)(nil)
)

// New reads the records hub ships once opened. The input logs nothing of
// its own: a drop is counted, never logged (that record would be one more
// to ship).
func New(cfg *Config, _ input.Settings, hub *Hub) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	level, _ := parseLevel(cfg.Level)
	return &Input{cfg: cfg, level: level, hub: hub, q: pushq.New(cfg.MaxPendingBytes)}, nil
}

// Open attaches the input to the hub: records logged from now on are
// its events.
func (in *Input) Open(_ context.Context, _ input.OpenOptions) error {
	in.detach = in.hub.Attach(in.level, in)
	return nil
}

// Offer queues one record, or drops and counts it when the queue is full
// or the input stopping. Never blocks.
func (in *Input) Offer(rec []byte) {
	ok, err := in.q.TryPut([][]byte{rec}, nil)
	if !ok || err != nil {
		in.stats.dropped.Add(1)
		return
	}
	in.stats.records.Add(1)
	in.stats.bytes.Add(int64(len(rec)))
}

// Poll hands up to max records to the scheduler, never waiting.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	return in.q.Poll(dst, max), nil
}

// Drain stops taking records and hands over every one queued.
func (in *Input) Drain(dst []input.Event) []input.Event {
	in.stopTaking()
	return in.q.Drain(dst)
}

// Close detaches the input; records still queued are lost. Idempotent.
func (in *Input) Close() error {
	in.stopTaking()
	in.q.Stop()
	return nil
}

func (in *Input) stopTaking() {
	in.closeOnce.Do(func() {
		if in.detach != nil {
			in.detach()
		}
	})
}

// Wakeup fires when records were queued.
func (in *Input) Wakeup() <-chan struct{} { return in.q.Wakeup() }

// Stats: LinesRead are the records taken, BytesRead their bytes,
// DroppedQueueFull those dropped for want of room.
func (in *Input) Stats() input.Stats {
	s := &in.stats
	return input.Stats{LinesRead: s.records.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(), DroppedQueueFull: s.dropped.Load()}
}
