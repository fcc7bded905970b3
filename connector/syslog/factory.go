package syslog

import (
	"fmt"

	"github.com/edge-agent/edge-agent/connector/input"
)

// TypeName is the `input.type` value of this input.
const TypeName = "syslog"

type factory struct{}

// NewFactory returns the factory for `type: syslog`. Create takes the
// *Config returned by NewDefaultConfig.
func NewFactory() input.Factory { return factory{} }

func (factory) Type() string                   { return TypeName }
func (factory) NewDefaultConfig() input.Config { return NewDefaultConfig() }

func (factory) Create(cfg input.Config, set input.Settings) (input.Input, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("syslog input: config is %T, want *syslog.Config", cfg)
	}
	return New(c, set)
}
