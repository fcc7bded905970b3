package httpin

import "github.com/edge-agent/edge-agent/connector/input"

// TypeName is the `input.type` value of this input.
const TypeName = "http"

// NewFactory returns the factory for `type: http`. Create takes the
// *Config returned by NewDefaultConfig.
func NewFactory() input.Factory { return input.NewFactory(TypeName, NewDefaultConfig, New) }
