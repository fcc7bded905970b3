package input

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type fakeConfig struct{ fail bool }

func (*fakeConfig) Validate() error { return nil }

type otherConfig struct{}

func (otherConfig) Validate() error { return nil }

type fakeInput struct{}

func (*fakeInput) Open(context.Context, OpenOptions) error                     { return nil }
func (*fakeInput) Poll(_ context.Context, dst []Event, _ int) ([]Event, error) { return dst, nil }
func (*fakeInput) Drain(dst []Event) []Event                                   { return dst }
func (*fakeInput) Close() error                                                { return nil }

func newFake(c *fakeConfig, _ Settings) (*fakeInput, error) {
	if c.fail {
		return nil, errors.New("cannot open")
	}
	return &fakeInput{}, nil
}

func TestNewFactory(t *testing.T) {
	f := NewFactory("fake", func() *fakeConfig { return &fakeConfig{} }, newFake)
	if f.Type() != "fake" {
		t.Errorf("Type() = %q", f.Type())
	}
	if _, ok := f.NewDefaultConfig().(*fakeConfig); !ok {
		t.Errorf("NewDefaultConfig() is %T, want *fakeConfig", f.NewDefaultConfig())
	}
	in, err := f.Create(&fakeConfig{}, Settings{})
	if err != nil || in == nil {
		t.Fatalf("Create = %v, %v; want an input", in, err)
	}
	// A failed create returns a nil Input, not a typed nil inside one.
	in, err = f.Create(&fakeConfig{fail: true}, Settings{})
	if err == nil || in != nil {
		t.Errorf("failing Create = %#v, %v; want nil and an error", in, err)
	}
	_, err = f.Create(otherConfig{}, Settings{})
	if err == nil || !strings.Contains(err.Error(), "fake input: config is input.otherConfig, want *input.fakeConfig") {
		t.Errorf("Create with another config type: %v", err)
	}
}
