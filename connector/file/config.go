package file

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/glob"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/linefilter"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// Config is the `input` section for `type: file`. Durations are in
// milliseconds as in the Java agent's agent.yaml; yaml tags are the keys.
type Config struct {
	// Paths are globs (`**` allowed) or directories (= every file below).
	Paths []string `yaml:"paths"`
	// Exclude are globs matched against absolute paths; matches are skipped.
	Exclude []string `yaml:"exclude"`
	// Encoding of the files: UTF-8 (default), ISO-8859-1/latin1,
	// UTF-16LE, UTF-16BE, UTF-16 (BOM), GBK.
	Encoding string `yaml:"encoding"`
	// ReadFromBeginning: files present when a path pattern is first
	// configured (the very first start, or the first start after the
	// pattern was added) are read from offset 0 (true) or tailed from
	// their end (false). Files found later are always read from 0.
	ReadFromBeginning bool `yaml:"read-from-beginning"`
	// GlobScanInterval: rescan period for new files. Default 5s.
	GlobScanInterval time.Duration `yaml:"glob-scan-interval-ms"`
	// CloseInactive: a file without new data for this long is closed
	// (it reopens at its saved offset when it grows). Default 5 min.
	CloseInactive time.Duration `yaml:"close-inactive-ms"`
	// OnError: skip (log, drop the file, rediscover later) or fail (stop).
	OnError string `yaml:"on-error"`
	// FingerprintBytes: how many leading bytes identify a file beside its
	// device and inode. Default 1024. Shorter files are still read.
	FingerprintBytes int `yaml:"fingerprint-bytes"`
	// MaxLineBytes: longer lines are truncated to this size and counted.
	// Default 1 MiB.
	MaxLineBytes int `yaml:"max-line-bytes"`
	// MaxOpenFiles caps open descriptors; files are read round-robin.
	// Default 1024. New lowers it to the process's open-files limit
	// (RLIMIT_NOFILE) less a reserve of 64 for the WAL, sockets and the
	// rest, and logs a warning when it does.
	MaxOpenFiles int `yaml:"max-open-files"`
	// UseFsnotify lets change notifications trigger reads sooner; polling
	// stays the source of truth. Default true.
	UseFsnotify bool `yaml:"fsnotify"`

	Multiline    MultilineConfig    `yaml:"multiline"`
	OutputFormat OutputFormatConfig `yaml:"output-format"`

	// Fields are static key/values added to every event object, after
	// its payload, sorted by key. Names the input writes itself (_index,
	// _file, _line, _offset, _ts, payload, _host, _agent_id) are refused.
	// None by default: events stay byte-identical to the Java agent's.
	Fields map[string]string `yaml:"fields"`
	// AddHostFields adds "_host" (the host name) and "_agent_id" (the
	// agent id) after Fields, to tell hosts apart in one SeaTunnel job.
	AddHostFields bool `yaml:"add-host-fields"`
	// IncludeLines and ExcludeLines are Go regular expressions matched
	// against an event's first line (after multiline grouping): with
	// IncludeLines set only matching events are kept, then events
	// matching ExcludeLines are dropped. Dropped events are counted
	// (Stats.Filtered) and their bytes are not read again.
	IncludeLines []string `yaml:"include-lines"`
	ExcludeLines []string `yaml:"exclude-lines"`
}

// MultilineConfig groups physical lines into one event (the keys are
// shared with the other inputs that group lines).
type MultilineConfig = multiline.Settings

// OutputFormatConfig chooses how the payload field is written.
type OutputFormatConfig struct {
	// Type: line (payload is the text) or json (payload is the parsed
	// JSON value when the line parses, else the text).
	Type string `yaml:"type"`
}

// NewDefaultConfig returns the documented defaults.
func NewDefaultConfig() *Config {
	return &Config{
		Encoding:         "UTF-8",
		GlobScanInterval: 5 * time.Second,
		CloseInactive:    5 * time.Minute,
		OnError:          "skip",
		FingerprintBytes: 1024,
		MaxLineBytes:     1 << 20,
		MaxOpenFiles:     1024,
		UseFsnotify:      true,
		Multiline:        multiline.DefaultSettings(),
		OutputFormat:     OutputFormatConfig{Type: "line"},
	}
}

var _ input.Config = (*Config)(nil)

// Validate reports every problem at once; each is an *input.FieldError.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Paths) == 0 {
		errs = append(errs, input.Errorf("paths", "must list at least one glob or directory"))
	}
	for i, p := range c.Paths {
		if strings.TrimSpace(p) == "" {
			errs = append(errs, input.Errorf(fmt.Sprintf("paths[%d]", i), "must not be blank"))
		} else if _, err := glob.Compile(p); err != nil {
			errs = append(errs, input.Errorf(fmt.Sprintf("paths[%d]", i), "%v", err))
		}
	}
	for i, p := range c.Exclude {
		if _, err := glob.CompileExclude(p); err != nil {
			errs = append(errs, input.Errorf(fmt.Sprintf("exclude[%d]", i), "%v", err))
		}
	}
	if _, err := lookupEncoding(c.Encoding); err != nil {
		errs = append(errs, input.Errorf("encoding", "%v", err))
	}
	if c.GlobScanInterval <= 0 {
		errs = append(errs, input.Errorf("glob-scan-interval-ms", "must be > 0, got %d", c.GlobScanInterval.Milliseconds()))
	}
	if c.CloseInactive <= 0 {
		errs = append(errs, input.Errorf("close-inactive-ms", "must be > 0, got %d", c.CloseInactive.Milliseconds()))
	}
	switch strings.ToLower(c.OnError) {
	case "skip", "fail":
	default:
		errs = append(errs, input.Errorf("on-error", "must be skip or fail, got %q", c.OnError))
	}
	if c.FingerprintBytes < 16 || c.FingerprintBytes > 1<<20 {
		errs = append(errs, input.Errorf("fingerprint-bytes", "must be between 16 and 1048576, got %d", c.FingerprintBytes))
	}
	if c.MaxLineBytes < 64 || c.MaxLineBytes > 64<<20 {
		errs = append(errs, input.Errorf("max-line-bytes", "must be between 64 and 67108864, got %d", c.MaxLineBytes))
	}
	if c.MaxOpenFiles <= 0 {
		errs = append(errs, input.Errorf("max-open-files", "must be > 0, got %d", c.MaxOpenFiles))
	}
	errs = append(errs, c.Multiline.Validate()...)
	switch strings.ToLower(c.OutputFormat.Type) {
	case "line", "json":
	default:
		errs = append(errs, input.Errorf("output-format.type", "must be line or json, got %q", c.OutputFormat.Type))
	}
	errs = append(errs, validateFields(c.Fields)...)
	_, ferrs := linefilter.Compile(c.IncludeLines, c.ExcludeLines)
	errs = append(errs, ferrs...)
	return errors.Join(errs...)
}
