package processing

import (
	"errors"
	"fmt"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

// Step is one entry of a `processors:` list: exactly one of its fields is
// set, and its key names the processor. Keys are relative to the entry
// (check.FieldError keys "processors[2].drop").
type Step struct {
	Parse   *ParseConfig      `yaml:"parse"`
	Drop    string            `yaml:"drop"`
	Keep    string            `yaml:"keep"`
	Set     map[string]string `yaml:"set"`
	SetExpr map[string]string `yaml:"set-expr"`
	Rename  map[string]string `yaml:"rename"`
	Move    map[string]string `yaml:"move"`
	Copy    map[string]string `yaml:"copy"`
	Remove  []string          `yaml:"remove"`
	// KeepFields is `keep:` written as a list of fields (an allow-list);
	// `keep:` written as a string is the filter Keep.
	KeepFields []string         `yaml:"keep-fields"`
	Truncate   *TruncateConfig  `yaml:"truncate"`
	Redact     *RedactConfig    `yaml:"redact"`
	Dedup      *DedupConfig     `yaml:"dedup"`
	Sample     *SampleConfig    `yaml:"sample"`
	Timestamp  *TimestampConfig `yaml:"timestamp"`
}

// Kind is the key of the processor the step sets ("parse", "drop"…), or
// "" when none is set.
func (s *Step) Kind() string {
	kinds := s.kinds()
	if len(kinds) == 0 {
		return ""
	}
	return kinds[0]
}

func (s *Step) kinds() []string {
	var out []string
	add := func(name string, set bool) {
		if set {
			out = append(out, name)
		}
	}
	add("parse", s.Parse != nil)
	add("drop", s.Drop != "")
	add("keep", s.Keep != "")
	add("set", s.Set != nil)
	add("set-expr", s.SetExpr != nil)
	add("rename", s.Rename != nil)
	add("move", s.Move != nil)
	add("copy", s.Copy != nil)
	add("remove", s.Remove != nil)
	add("keep-fields", s.KeepFields != nil)
	add("truncate", s.Truncate != nil)
	add("redact", s.Redact != nil)
	add("dedup", s.Dedup != nil)
	add("sample", s.Sample != nil)
	add("timestamp", s.Timestamp != nil)
	return out
}

// OnError is what parse does with a value that does not parse.
type OnError string

const (
	// OnErrorKeep passes the event on unchanged, marked with _parse_error.
	OnErrorKeep OnError = "keep"
	// OnErrorDrop drops it (counted).
	OnErrorDrop OnError = "drop"
)

// ParseConfig is `parse:`.
type ParseConfig struct {
	// Format: json, logfmt, regex, csv or syslog.
	Format string `yaml:"format"`
	// Field holds the text to parse; default payload.
	Field string `yaml:"field"`
	// Target is where the object goes; default: Field itself (the text
	// becomes the object).
	Target string `yaml:"target"`
	// Pattern is regex's expression; its named groups become the fields.
	Pattern string `yaml:"pattern"`
	// Columns are csv's column names, in order.
	Columns []string `yaml:"columns"`
	// Delimiter is csv's one-character separator; default ",".
	Delimiter string `yaml:"delimiter"`
	// OnError: keep (default) or drop.
	OnError OnError `yaml:"on-error"`
}

// TruncateConfig is `truncate:`.
type TruncateConfig struct {
	// Fields to cut; default payload.
	Fields []string `yaml:"fields"`
	// MaxBytes is the longest a value may be, marker included; cuts fall
	// on a character boundary.
	MaxBytes int `yaml:"max-bytes"`
	// Marker ends a cut value; default "…".
	Marker *string `yaml:"marker"`
}

// RedactConfig is `redact:`.
type RedactConfig struct {
	// Detectors are built-in detector names (DetectorNames).
	Detectors []string `yaml:"detectors"`
	// Patterns are custom detectors: name → regular expression.
	Patterns map[string]string `yaml:"patterns"`
	// Action: mask (default), hash or remove.
	Action string `yaml:"action"`
	// KeepLast is how many trailing characters mask keeps; default 0
	// (4 for credit-card).
	KeepLast *int `yaml:"keep-last"`
	// HashKeyFile holds hash's HMAC-SHA256 key (at least 16 bytes).
	HashKeyFile string `yaml:"hash-key-file"`
	// Fields to scan; default payload (every string inside it).
	Fields []string `yaml:"fields"`
}

// DedupConfig is `dedup:`.
type DedupConfig struct {
	// Window is how long the first event of a key waits for repeats.
	Window time.Duration `yaml:"window-ms"`
	// Key is an expression; default payload.
	Key string `yaml:"key"`
	// MaxKeys bounds the distinct keys held; an event over it passes on
	// unfolded (counted keys_over_cap).
	MaxKeys int `yaml:"max-keys"`
}

// SampleConfig is `sample:`.
type SampleConfig struct {
	// OneIn keeps one key in N (N >= 1).
	OneIn int `yaml:"one-in"`
	// Key is an expression whose value is hashed; default payload.
	Key string `yaml:"key"`
	// Unless is an expression: when true the event is always kept.
	Unless string `yaml:"unless"`
}

// TimestampConfig is `timestamp:`.
type TimestampConfig struct {
	// Field holds the time.
	Field string `yaml:"field"`
	// Layout: auto (default: RFC 3339, common layouts, Unix seconds,
	// milliseconds or nanoseconds by magnitude), rfc3339, unix-s,
	// unix-ms, unix-ns, or a Go time layout.
	Layout string `yaml:"layout"`
	// Fallback when the field is missing or does not parse: keep (the
	// input's _ts stays; default), now, or drop.
	Fallback string `yaml:"fallback"`
}

// Defaults and limits: one place for each.
const (
	defaultField       = "payload"
	defaultMaxKeys     = 10000
	maxMaxKeys         = 1000000
	defaultTruncMark   = "…"
	defaultCardKeep    = 4
	minHashKeyBytes    = 16
	maxPatternBytes    = 4096
	defaultDedupWindow = 10 * time.Second
)

// Validate checks a whole list, compiling every expression and pattern,
// and reports every problem keyed "processors[i].<key>".
func Validate(steps []Step) error {
	_, err := build(steps, Settings{})
	return err
}

// stepError keys err under step i.
func stepError(i int, key string, err error) error {
	k := fmt.Sprintf("processors[%d]", i)
	if key != "" {
		k += "." + key
	}
	return &check.FieldError{Key: k, Err: err}
}

// errNoKind and errManyKinds are a step's shape problems.
func shapeError(s *Step) error {
	switch k := s.kinds(); len(k) {
	case 0:
		return errors.New("empty processor: give one of parse, drop, keep, set, set-expr, rename, move, copy, remove, truncate, redact, dedup, sample, timestamp")
	case 1:
		return nil
	default:
		return fmt.Errorf("one processor per entry, found %v: write each as its own list entry", k)
	}
}
