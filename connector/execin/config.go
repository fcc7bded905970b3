package execin

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/lines"
)

// TypeName is the `input.type` value of this input.
const TypeName = "exec"

// Defaults and limits: the one place each is written.
const (
	DefaultRestartBackoff    = time.Second
	DefaultMaxRestartBackoff = time.Minute
	DefaultStopGrace         = 5 * time.Second
	DefaultMaxLineBytes      = 1 << 20
	DefaultMaxPendingBytes   = 4 << 20
	// healthyRun is how long a kept-running command must live for its
	// restart backoff to start again from restart-backoff-ms.
	healthyRun = time.Minute
)

// Config is the `input` section for `type: exec`; yaml tags are the keys.
type Config struct {
	// Command is the program and its arguments (no shell: write
	// ["/bin/sh", "-c", "..."] for one). Required.
	Command []string `yaml:"command"`
	// Dir is the working directory (default: the agent's).
	Dir string `yaml:"dir"`
	// Env are KEY=VALUE pairs added to the agent's environment.
	Env []string `yaml:"env"`
	// Interval, when set, runs the command every interval (a run still
	// going when the next is due delays it: runs never overlap). 0
	// (default) keeps it running, restarted when it exits.
	Interval time.Duration `yaml:"interval-ms"`
	// Timeout stops a scheduled run that takes longer. Default 0: none.
	Timeout time.Duration `yaml:"timeout-ms"`
	// RestartBackoff is the first wait before restarting a kept-running
	// command that exited, doubled at each exit up to MaxRestartBackoff;
	// a run of a minute or more starts it over. Defaults 1s and 60s.
	RestartBackoff    time.Duration `yaml:"restart-backoff-ms"`
	MaxRestartBackoff time.Duration `yaml:"max-restart-backoff-ms"`
	// StopGrace is the wait between SIGTERM and SIGKILL. Default 5s.
	StopGrace time.Duration `yaml:"stop-grace-ms"`
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
	return &Config{
		RestartBackoff: DefaultRestartBackoff, MaxRestartBackoff: DefaultMaxRestartBackoff,
		StopGrace: DefaultStopGrace, Format: lines.FormatText,
		MaxLineBytes: DefaultMaxLineBytes, MaxPendingBytes: DefaultMaxPendingBytes,
	}
}

var (
	_ input.Config     = (*Config)(nil)
	_ input.PathAnchor = (*Config)(nil)
	_ input.Sourcer    = (*Config)(nil)
)

// Validate reports every problem at once; each is an *input.FieldError.
// It looks the program up, so a missing one fails `config check`.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Command) == 0 || strings.TrimSpace(c.Command[0]) == "" {
		errs = append(errs, input.Errorf("command", `name the program and its arguments, e.g. ["/usr/bin/vmstat", "5"]`))
	} else if _, err := exec.LookPath(c.Command[0]); err != nil {
		errs = append(errs, input.Errorf("command[0]", "%s cannot be run: %v", c.Command[0], err))
	}
	for i, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			errs = append(errs, input.Errorf(fmt.Sprintf("env[%d]", i), "must be KEY=VALUE"))
		}
	}
	if c.Interval < 0 || c.Timeout < 0 {
		errs = append(errs, input.Errorf("interval-ms", "interval-ms and timeout-ms must be >= 0"))
	}
	if c.Timeout > 0 && c.Interval == 0 {
		errs = append(errs, input.Errorf("timeout-ms", "applies to scheduled runs: set interval-ms too"))
	}
	if c.RestartBackoff <= 0 || c.MaxRestartBackoff < c.RestartBackoff {
		errs = append(errs, input.Errorf("restart-backoff-ms", "must be > 0 and at most max-restart-backoff-ms"))
	}
	if c.StopGrace <= 0 {
		errs = append(errs, input.Errorf("stop-grace-ms", "must be > 0"))
	}
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

// AnchorPaths resolves a relative program path (one with a slash) and dir
// against base; a bare name is looked up in PATH.
func (c *Config) AnchorPaths(base string) {
	if base == "" {
		return
	}
	if len(c.Command) > 0 && strings.ContainsRune(c.Command[0], '/') && !filepath.IsAbs(c.Command[0]) {
		c.Command[0] = filepath.Join(base, c.Command[0])
	}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		c.Dir = filepath.Join(base, c.Dir)
	}
}

// Sources names the program (not its arguments: they may hold secrets).
func (c *Config) Sources() []string {
	if len(c.Command) == 0 {
		return nil
	}
	return []string{"exec:" + c.Command[0]}
}
