// Package check is what the agent's own components (scheduler, WAL,
// logging, outputs) use to validate their options. Each problem names the
// key as agent.yaml spells it, relative to the component's section, so the
// config layer can add the section, the file and line:column without
// knowing the rule. The check itself lives with the component that uses
// the setting: one rule, one place.
package check

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalid means "the configuration is wrong": the config layer wraps
// it in every problem it reports, and a component given options that its
// own Validate refuses wraps it too, so the process exits as for a bad
// agent.yaml whichever caught it.
var ErrInvalid = errors.New("invalid configuration")

// FieldError is a problem with one key of a component's options.
type FieldError struct {
	Key string // relative to the component's section, e.g. "bulk-max-size"
	Err error
}

func (e *FieldError) Error() string    { return e.Key + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error    { return e.Err }
func (e *FieldError) FieldKey() string { return e.Key }

// Errorf builds a *FieldError for key.
func Errorf(key, format string, args ...any) error {
	return &FieldError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Problems gathers every problem of one Validate call, so an operator sees
// them all at once.
type Problems struct{ errs []error }

// Add records a problem with key.
func (p *Problems) Add(key, format string, args ...any) {
	p.errs = append(p.errs, Errorf(key, format, args...))
}

// Positive wants v > 0.
func (p *Problems) Positive(key string, v int64) {
	if v <= 0 {
		p.Add(key, "must be > 0, got %d", v)
	}
}

// NonNegative wants v >= 0.
func (p *Problems) NonNegative(key string, v int64) {
	if v < 0 {
		p.Add(key, "must be >= 0, got %d", v)
	}
}

// PositiveMillis wants d > 0 for a `*-ms` key, shown in milliseconds as
// it was written.
func (p *Problems) PositiveMillis(key string, d time.Duration) {
	if d <= 0 {
		p.Add(key, "must be > 0, got %d", d.Milliseconds())
	}
}

// NonNegativeMillis wants d >= 0 for a `*-ms` key.
func (p *Problems) NonNegativeMillis(key string, d time.Duration) {
	if d < 0 {
		p.Add(key, "must be >= 0, got %d", d.Milliseconds())
	}
}

// Err returns every problem joined, or nil.
func (p *Problems) Err() error { return errors.Join(p.errs...) }
