package config

import (
	"reflect"
	"strings"
)

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
// identity): the Config fields and the input config's `id` key, which the
// input uses as its WAL source id.
func (c *Config) SetIDs(agentID, inputID, outputID string) {
	c.Agent.ID, c.InputID, c.Output.ID = agentID, inputID, outputID
	if c.Input == nil {
		return
	}
	v := reflect.ValueOf(c.Input)
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		setStringField(v.Elem(), "id", strings.TrimSpace(inputID))
	}
}
