package config

import "strings"

// The parse helpers below accept what a user may write and return the
// normalised value; Load stores the normalised form and Validate uses the
// same helpers, so a Config built in code may use either form.

func parseLogLevel(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "":
		return "info", true
	case "debug", "info", "warn", "error":
		return v, true
	case "warning":
		return "warn", true
	}
	return s, false
}

// parseLogFormat: "logfmt" is what slog's text handler writes.
func parseLogFormat(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "":
		return "json", true
	case "json", "text":
		return v, true
	case "logfmt":
		return "text", true
	}
	return s, false
}

// normalize rewrites enum values to their canonical form and trims the
// values the Java agent trims. Invalid values are left for Validate.
func (c *Config) normalize() {
	norm := func(p *string, parse func(string) (string, bool)) {
		if v, ok := parse(*p); ok {
			*p = v
		}
	}
	norm(&c.Log.Level, parseLogLevel)
	norm(&c.Log.Format, parseLogFormat)
	c.Agent.ID = strings.TrimSpace(c.Agent.ID)
}
