package config

import (
	"github.com/edge-agent/edge-agent/connector/input"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// RedactedValue is the placeholder for secrets in Redacted copies.
const RedactedValue = output.RedactedValue

// Redacted returns a copy safe to log or show in status: the output's
// and the inputs' secrets (tokens, encryption keys) are replaced by a
// placeholder by their own configs, which know which of their keys are
// secret (input.Redacter for inputs), and so
// are http.token and the OpAMP header values (empty
// stays empty, so "not set" is still visible). File paths are kept: they
// are not secrets.
func (c *Config) Redacted() *Config {
	r := *c
	if r.HTTP.Token != "" {
		r.HTTP.Token = RedactedValue
	}
	r.Management = r.Management.Redacted(RedactedValue)
	if r.Output.Options != nil {
		r.Output.Options = r.Output.Options.Redacted()
	}
	if len(r.Inputs) > 0 {
		r.Inputs = append([]InputEntry(nil), r.Inputs...)
		for i := range r.Inputs {
			if rd, ok := r.Inputs[i].Config.(input.Redacter); ok {
				r.Inputs[i].Config = rd.Redacted()
			}
		}
	}
	return &r
}
