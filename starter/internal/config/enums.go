package config

import "strings"

// normalize trims the values the Java agent trims. Enums parse
// themselves (UnmarshalText of the component that owns them).
func (c *Config) normalize() {
	c.Agent.ID = strings.TrimSpace(c.Agent.ID)
}
