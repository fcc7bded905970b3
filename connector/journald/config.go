package journald

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/linefilter"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// Config is the `input` section for `type: journald`. Durations are in
// milliseconds as everywhere in agent.yaml; yaml tags are the keys.
type Config struct {
	// Units are system units to read (journalctl --unit: the unit's own
	// messages and those about it; globs allowed). Several are ORed.
	Units []string `yaml:"units"`
	// UserUnits are user units (journalctl --user-unit), ORed with Units.
	UserUnits []string `yaml:"user-units"`
	// Matches are FIELD=value terms passed to journalctl as they are:
	// terms on one field are ORed, on different fields ANDed, and a "+"
	// alone separates alternatives.
	Matches []string `yaml:"matches"`
	// Priority is the highest priority number read (0 emerg … 7 debug,
	// or its name); "" reads every priority.
	Priority string `yaml:"priority"`
	// Since applies to the first start only (no saved cursor): entries
	// from this time on (journalctl --since: "2024-05-01 12:00:00",
	// "-1h", "today"). It wins over read-from-beginning.
	Since string `yaml:"since"`
	// Directory reads the journal files of one directory
	// (journalctl --directory) instead of the system journal.
	Directory string `yaml:"directory"`
	// Files reads these journal files (journalctl --file, globs allowed).
	Files []string `yaml:"files"`
	// IncludeFields, when set, lists the journal fields an event carries
	// (beside payload and _ts); by default it carries every field but
	// MESSAGE (the payload) and the __ address fields. ExcludeFields are
	// dropped after.
	IncludeFields []string `yaml:"include-fields"`
	ExcludeFields []string `yaml:"exclude-fields"`
	// ReadFromBeginning: on the first start (no saved cursor) read the
	// whole journal (true) or only entries written from now on (false,
	// the default, as the file input tails files from their end).
	ReadFromBeginning bool `yaml:"read-from-beginning"`
	// JournalctlPath is the journalctl binary; "" looks it up on PATH.
	JournalctlPath string `yaml:"journalctl-path"`
	// MaxMessageBytes: a longer MESSAGE (or other field) is cut to this
	// size and counted as truncated. Default 1 MiB.
	MaxMessageBytes int `yaml:"max-message-bytes"`
	// HangTimeout: when journalctl printed nothing for this long while
	// the agent was ready for more, the journal is asked for its newest
	// matching entry; if journalctl is behind it (and stays behind a few
	// seconds more) it is killed and started again. Default 30 s.
	HangTimeout time.Duration `yaml:"hang-timeout-ms"`
	// RestartBackoff is the first wait before journalctl is started again
	// after it exited; it doubles up to RestartBackoffMax. Defaults 1 s
	// and 30 s.
	RestartBackoff    time.Duration `yaml:"restart-backoff-ms"`
	RestartBackoffMax time.Duration `yaml:"restart-backoff-max-ms"`

	// Multiline groups consecutive entries (their MESSAGE values) into
	// one event, with the file input's keys and rules. It sees the
	// entries of every unit the input reads in journal order, so use it
	// on an input that reads one stream (one unit).
	Multiline multiline.Settings `yaml:"multiline"`
	// IncludeLines and ExcludeLines are Go regular expressions matched
	// against an event's (first) MESSAGE, as for files.
	IncludeLines []string `yaml:"include-lines"`
	ExcludeLines []string `yaml:"exclude-lines"`
}

// NewDefaultConfig returns the documented defaults.
func NewDefaultConfig() *Config {
	return &Config{
		MaxMessageBytes:   1 << 20,
		HangTimeout:       30 * time.Second,
		RestartBackoff:    time.Second,
		RestartBackoffMax: 30 * time.Second,
		Multiline:         multiline.DefaultSettings(),
	}
}

var _ input.Config = (*Config)(nil)

var (
	fieldNameRE = regexp.MustCompile(`^[A-Z0-9_]{1,64}$`)
	priorities  = []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}
)

// priorityLevel resolves Priority to 0..7, or -1 for "".
func priorityLevel(p string) (int, error) {
	p = strings.ToLower(strings.TrimSpace(p))
	if p == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(p); err == nil && n >= 0 && n <= 7 {
		return n, nil
	}
	for i, name := range priorities {
		if p == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("must be 0..7 or one of %s, got %q", strings.Join(priorities, ", "), p)
}

// Validate reports every problem at once; each is an *input.FieldError.
func (c *Config) Validate() error {
	var errs []error
	list := func(key string, vals []string, check func(string) error) {
		for i, v := range vals {
			if err := check(v); err != nil {
				errs = append(errs, input.Errorf(fmt.Sprintf("%s[%d]", key, i), "%v", err))
			}
		}
	}
	notBlank := func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("must not be blank")
		}
		if strings.ContainsAny(v, "\n\x00") {
			return errors.New("must not hold a newline or NUL")
		}
		return nil
	}
	list("units", c.Units, notBlank)
	list("user-units", c.UserUnits, notBlank)
	list("files", c.Files, notBlank)
	list("matches", c.Matches, func(m string) error {
		if m == "+" {
			return nil
		}
		name, _, ok := strings.Cut(m, "=")
		if !ok || !fieldNameRE.MatchString(name) || strings.ContainsAny(m, "\n\x00") {
			return fmt.Errorf("must be FIELD=value (FIELD of A-Z, 0-9, _) or \"+\", got %q", m)
		}
		return nil
	})
	fieldName := func(f string) error {
		if !fieldNameRE.MatchString(f) {
			return fmt.Errorf("must be a journal field name (A-Z, 0-9, _; at most 64), got %q", f)
		}
		return nil
	}
	list("include-fields", c.IncludeFields, fieldName)
	list("exclude-fields", c.ExcludeFields, fieldName)
	if _, err := priorityLevel(c.Priority); err != nil {
		errs = append(errs, input.Errorf("priority", "%v", err))
	}
	if strings.ContainsAny(c.Since, "\n\x00") {
		errs = append(errs, input.Errorf("since", "must not hold a newline or NUL"))
	}
	if c.Directory != "" && len(c.Files) > 0 {
		errs = append(errs, input.Errorf("files", "set directory or files, not both"))
	}
	if c.MaxMessageBytes < 64 || c.MaxMessageBytes > 64<<20 {
		errs = append(errs, input.Errorf("max-message-bytes", "must be between 64 and 67108864, got %d", c.MaxMessageBytes))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"hang-timeout-ms", c.HangTimeout}, {"restart-backoff-ms", c.RestartBackoff}, {"restart-backoff-max-ms", c.RestartBackoffMax}} {
		if d.v <= 0 {
			errs = append(errs, input.Errorf(d.key, "must be > 0, got %d", d.v.Milliseconds()))
		}
	}
	if c.RestartBackoffMax > 0 && c.RestartBackoff > c.RestartBackoffMax {
		errs = append(errs, input.Errorf("restart-backoff-max-ms", "must be >= restart-backoff-ms (%d), got %d", c.RestartBackoff.Milliseconds(), c.RestartBackoffMax.Milliseconds()))
	}
	errs = append(errs, c.Multiline.Validate()...)
	_, ferrs := linefilter.Compile(c.IncludeLines, c.ExcludeLines)
	errs = append(errs, ferrs...)
	return errors.Join(errs...)
}

// journalctl resolves the binary: JournalctlPath, or journalctl on PATH.
func (c *Config) journalctl() (string, error) {
	if c.JournalctlPath != "" {
		return c.JournalctlPath, nil
	}
	p, err := exec.LookPath("journalctl")
	if err != nil {
		return "", fmt.Errorf("journalctl not found on PATH (install systemd's journalctl or set journalctl-path): %w", err)
	}
	return p, nil
}

// Sources says where the input reads, for the agent's description.
func (c *Config) Sources() []string {
	switch {
	case c.Directory != "":
		return []string{"journal:" + c.Directory}
	case len(c.Files) > 0:
		out := make([]string, len(c.Files))
		for i, f := range c.Files {
			out[i] = "journal:" + f
		}
		return out
	}
	return []string{"journal"}
}

// AnchorPaths makes directory, files and journalctl-path absolute against
// the install root, as the file input's paths are.
func (c *Config) AnchorPaths(base string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	c.Directory = abs(c.Directory)
	for i := range c.Files {
		c.Files[i] = abs(c.Files[i])
	}
	if strings.ContainsRune(c.JournalctlPath, filepath.Separator) {
		c.JournalctlPath = abs(c.JournalctlPath)
	}
}
