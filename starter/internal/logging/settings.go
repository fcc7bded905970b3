package logging

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

// Formats of the log file (log.format).
const (
	FormatJSON Format = "json"
	FormatText Format = "text"
)

// Format is log.format.
type Format string

// UnmarshalText accepts json and text, and logfmt, which is what slog's
// text handler writes; "" means json.
func (f *Format) UnmarshalText(b []byte) error {
	switch v := strings.ToLower(strings.TrimSpace(string(b))); v {
	case "", "json":
		*f = FormatJSON
	case "text", "logfmt":
		*f = FormatText
	default:
		return fmt.Errorf("must be json or text, got %q", string(b))
	}
	return nil
}

// Level is log.level.
type Level slog.Level

// UnmarshalText reads the names ParseLevel takes.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = Level(v)
	return nil
}

func (l Level) String() string { return slog.Level(l).String() }

// DefaultFile is log.file's default, relative to the install root.
const DefaultFile = "log/edge-agent.log"

// Settings are agent.yaml's log.* keys.
type Settings struct {
	// Level is the minimum level written.
	Level Level `yaml:"level"`
	// Format of the file: json or text (stderr is tint on a terminal,
	// JSON otherwise, whatever this says).
	Format Format `yaml:"format"`
	// File is the log file; New wants it absolute.
	File string `yaml:"file"`
	// MaxSizeMB rotates the file when it reaches this size.
	MaxSizeMB int `yaml:"max-size-mb"`
	// MaxBackups is how many rotated files are kept (0: all).
	MaxBackups int `yaml:"max-backups"`
	// MaxAgeDays deletes rotated files older than this (0: never by age).
	MaxAgeDays int `yaml:"max-age-days"`
}

// DefaultSettings are the agent's logging defaults.
func DefaultSettings() Settings {
	return Settings{Level: Level(slog.LevelInfo), Format: FormatJSON, File: DefaultFile, MaxSizeMB: 100, MaxBackups: 5}
}

// Validate names keys relative to the log section.
func (s Settings) Validate() error {
	var p check.Problems
	if s.Format != FormatJSON && s.Format != FormatText {
		p.Add("format", "must be json or text, got %q", s.Format)
	}
	if strings.TrimSpace(s.File) == "" {
		p.Add("file", "must not be empty")
	}
	p.Positive("max-size-mb", int64(s.MaxSizeMB))
	p.NonNegative("max-backups", int64(s.MaxBackups))
	p.NonNegative("max-age-days", int64(s.MaxAgeDays))
	return p.Err()
}
