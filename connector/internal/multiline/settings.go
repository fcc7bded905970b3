package multiline

import (
	"regexp"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// Settings is the `multiline` section of an input that groups lines (the
// file input's lines, the journald input's entries); yaml tags are the keys.
type Settings struct {
	// Pattern: a non-empty regular expression enables multiline.
	Pattern string `yaml:"pattern"`
	// Match: after (a matching line starts an event) or before (a
	// matching line ends an event).
	Match string `yaml:"match"`
	// Negate inverts the pattern test.
	Negate bool `yaml:"negate"`
	// MaxLines caps lines per event; longer groups are split. Default 500.
	MaxLines int `yaml:"max-lines"`
	// FlushIdleTimeout: a buffered group is emitted after this long
	// without a new line for it (measured from the LAST line). Default 5s.
	FlushIdleTimeout time.Duration `yaml:"flush-idle-timeout-ms"`
}

// DefaultSettings returns the documented defaults (multiline off).
func DefaultSettings() Settings {
	return Settings{Match: "after", MaxLines: 500, FlushIdleTimeout: 5 * time.Second}
}

// Validate checks the section; each error is an *input.FieldError keyed
// "multiline.<key>".
func (m *Settings) Validate() []error {
	var errs []error
	if m.Pattern != "" {
		if _, err := regexp.Compile(m.Pattern); err != nil {
			errs = append(errs, input.Errorf("multiline.pattern", "invalid regular expression: %v", err))
		}
		if m.FlushIdleTimeout <= 0 {
			errs = append(errs, input.Errorf("multiline.flush-idle-timeout-ms", "must be > 0 when multiline is enabled, got %d", m.FlushIdleTimeout.Milliseconds()))
		}
	}
	switch strings.ToLower(m.Match) {
	case "after", "before":
	default:
		errs = append(errs, input.Errorf("multiline.match", "must be after or before, got %q", m.Match))
	}
	if m.MaxLines <= 0 {
		errs = append(errs, input.Errorf("multiline.max-lines", "must be > 0, got %d", m.MaxLines))
	}
	return errs
}

// Compile returns the assembler config, or nil when multiline is off (no
// pattern). Call it on validated settings.
func (m *Settings) Compile() (*Config, error) {
	if m.Pattern == "" {
		return nil, nil
	}
	re, err := regexp.Compile(m.Pattern)
	if err != nil {
		return nil, err
	}
	mode := After
	if strings.EqualFold(m.Match, "before") {
		mode = Before
	}
	return &Config{Pattern: re, Mode: mode, Negate: m.Negate, MaxLines: m.MaxLines}, nil
}
