package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lmittmann/tint"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Options says where and how to log: the log section's settings, with
// File absolute (empty disables the file), and the process's stderr.
type Options struct {
	Settings
	// Stderr receives every record besides the file: tint when Terminal,
	// JSON lines otherwise (what journald and container runtimes collect).
	// Nil logs to the file alone, as a --background agent does: its stderr
	// is edge-agent.out, kept for what only the Go runtime can say.
	Stderr io.Writer
	// Terminal is true when Stderr is an interactive terminal.
	Terminal bool
	// LevelVar, when set, is the level every handler reads: New sets it to
	// Level, and setting it later changes the level at once (a config
	// reload) without rebuilding the handlers.
	LevelVar *slog.LevelVar
	// Ring, when set, also keeps every record logged (JSON, at the same
	// level) for the diagnostics bundle.
	Ring *Ring
	// Own, when set, wraps the handler built from the rest: the agent's
	// own logs are shipped through it (the self input), at the levels
	// its sinks ask for, whatever Level.
	Own func(slog.Handler) slog.Handler
}

// New returns the logger described by o and a Closer that releases the log
// file. The file is opened once here so that a path that cannot be written
// fails at start-up with a clear error instead of losing every record.
func New(o Options) (*slog.Logger, io.Closer, error) {
	var handlers []slog.Handler
	var closer io.Closer = nopCloser{}
	level := o.LevelVar
	if level == nil {
		level = new(slog.LevelVar)
	}
	level.Set(slog.Level(o.Level))
	if o.Stderr != nil {
		handlers = append(handlers, stderrHandler(o.Stderr, o.Terminal, level))
	}
	if o.File != "" {
		if err := probeFile(o.File); err != nil {
			return nil, nil, err
		}
		lj := &lumberjack.Logger{
			Filename:   o.File,
			MaxSize:    o.MaxSizeMB,
			MaxBackups: o.MaxBackups,
			MaxAge:     o.MaxAgeDays,
			LocalTime:  true,
		}
		closer = lj
		h, err := fileHandler(lj, o.Format, level)
		if err != nil {
			return nil, nil, err
		}
		handlers = append(handlers, h)
	}
	if o.Ring != nil {
		handlers = append(handlers, slog.NewJSONHandler(o.Ring, handlerOptions(level)))
	}
	var h slog.Handler
	switch len(handlers) {
	case 0:
		h = slog.DiscardHandler
	case 1:
		h = handlers[0]
	default:
		h = slog.NewMultiHandler(handlers...)
	}
	if o.Own != nil {
		h = o.Own(h)
	}
	return slog.New(h), closer, nil
}

// Console returns a logger that writes to w only, as New writes stderr:
// tint on a terminal, JSON lines otherwise. It serves the moments before the
// config (and so the log file) is known, and commands that never open the
// log file.
func Console(w io.Writer, terminal bool, level slog.Level) *slog.Logger {
	return slog.New(stderrHandler(w, terminal, level))
}

func stderrHandler(w io.Writer, terminal bool, level slog.Leveler) slog.Handler {
	if terminal {
		return newTint(w, level)
	}
	return slog.NewJSONHandler(w, handlerOptions(level))
}

// handlerOptions are the options of every slog handler New and Console build.
func handlerOptions(level slog.Leveler) *slog.HandlerOptions {
	return &slog.HandlerOptions{Level: level, ReplaceAttr: durationWithUnit}
}

// durationWithUnit renders a time.Duration as "17ms" in every handler: the
// JSON handler would write its nanoseconds as a bare integer, which nobody
// reading a log or a dashboard can tell from a byte count.
func durationWithUnit(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// ParseLevel maps debug|info|warn|warning|error (any case) to a level.
// Empty means info.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("must be debug, info, warn or error, got %q", s)
}

// IsTerminal reports whether f is a character device, which for stderr
// means an interactive terminal. It needs no ioctl and no dependency; a
// redirect to /dev/null also counts, which only costs unseen colour codes.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func newTint(w io.Writer, level slog.Leveler) slog.Handler {
	return tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.DateTime + ".000", ReplaceAttr: durationWithUnit})
}

func fileHandler(w io.Writer, format Format, level slog.Leveler) (slog.Handler, error) {
	opts := handlerOptions(level)
	switch format {
	case "", FormatJSON:
		return slog.NewJSONHandler(w, opts), nil
	case FormatText:
		return slog.NewTextHandler(w, opts), nil
	}
	// Options built in code only: a decoded Format is always valid.
	return nil, fmt.Errorf("unknown log format %q (want json or text)", format)
}

// probeFile creates the log folder and checks the file opens for append.
func probeFile(path string) error {
	// Logs may quote the lines the agent ships: readable by the agent's
	// group (adm on Debian, as for /var/log) and nobody else.
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("create log folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	return f.Close()
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
