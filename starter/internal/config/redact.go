package config

import "strings"

// RedactedValue is the placeholder for secrets in Redacted copies.
const RedactedValue = "<redacted>"

// Redacted returns a copy safe to log or show in status: the token and
// the encryption key are replaced by a placeholder (empty stays empty, so
// "not set" is still visible). File paths are kept: they are not secrets.
func (c *Config) Redacted() *Config {
	r := *c
	if r.Output.Token != "" {
		r.Output.Token = RedactedValue
	}
	if r.Output.AESSecretKeyBase64 != "" {
		r.Output.AESSecretKeyBase64 = RedactedValue
	}
	return &r
}

// SetIDs records the resolved agent, input and output ids (see package
// identity).
func (c *Config) SetIDs(agentID, inputID, outputID string) {
	c.Agent.ID, c.InputID, c.Output.ID = agentID, strings.TrimSpace(inputID), outputID
}
