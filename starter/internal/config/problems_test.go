package config

import (
	"errors"
	"testing"
)

// Problems counts one problem per FieldError of a joined tree, through
// any wrapping, and a plain error as one.
func TestProblems(t *testing.T) {
	fe1 := &FieldError{File: "a.yaml", Key: "x", Line: 1, Column: 1, Err: errors.New("bad")}
	fe2 := &FieldError{File: "a.yaml", Key: "y", Line: 2, Column: 1, Err: errors.New("worse")}
	tests := []struct {
		err  error
		want int
	}{
		{errors.New("plain"), 1},
		{fe1, 1},
		{errors.Join(fe1, fe2), 2},
		{wrap(errors.Join(fe1, fe2)), 2},
		{wrap(fe1), 1},
	}
	for _, tt := range tests {
		if got := Problems(tt.err); len(got) != tt.want {
			t.Errorf("Problems(%v) = %d errors, want %d", tt.err, len(got), tt.want)
		}
	}
}

func wrap(err error) error { return &wrapped{err} }

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "load: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
