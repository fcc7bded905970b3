package input

import "fmt"

// NewFactory returns the Factory of one input type: newDefault makes the
// config agent.yaml is decoded on top of, and Create hands that config,
// typed, to create. A config of another type (a bug in the caller) is an
// error, not a panic.
func NewFactory[C Config, I Input](typ string, newDefault func() C, create func(C, Settings) (I, error)) Factory {
	return typedFactory[C, I]{typ: typ, newDefault: newDefault, create: create}
}

type typedFactory[C Config, I Input] struct {
	typ        string
	newDefault func() C
	create     func(C, Settings) (I, error)
}

func (f typedFactory[C, I]) Type() string             { return f.typ }
func (f typedFactory[C, I]) NewDefaultConfig() Config { return f.newDefault() }

func (f typedFactory[C, I]) Create(cfg Config, set Settings) (Input, error) {
	c, ok := cfg.(C)
	if !ok {
		var want C
		return nil, fmt.Errorf("%s input: config is %T, want %T", f.typ, cfg, want)
	}
	in, err := f.create(c, set)
	if err != nil {
		// Not in: a typed nil would make a non-nil Input.
		return nil, err
	}
	return in, nil
}
