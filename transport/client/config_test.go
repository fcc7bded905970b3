package client

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsTheJavaAgents(t *testing.T) {
	d := DefaultConfig()
	if d.ConnectTimeout != 5*time.Second || d.ReadTimeout != 30*time.Second || d.MaxBatchSendAttempts != 64 ||
		d.InitialBackoff != 100*time.Millisecond || d.MaxBackoff != 30*time.Second ||
		d.MaxReconnectCycles != 16 || d.MaxInFlight != 64 {
		t.Fatalf("DefaultConfig = %+v", d)
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Endpoint: "engine.example:9999", Token: "t"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	tests := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"no port", func(c *Config) { c.Endpoint = "engine.example" }, `endpoint "engine.example"`},
		{"empty port", func(c *Config) { c.Endpoint = "engine.example:" }, `endpoint "engine.example:": port ""`},
		{"port 0", func(c *Config) { c.Endpoint = "h:0" }, `port "0" must be a number from 1 to 65535`},
		{"port too big", func(c *Config) { c.Endpoint = "h:65536" }, `endpoint "h:65536"`},
		{"port not a number", func(c *Config) { c.Endpoint = "h:http" }, `port "http"`},
		{"no host", func(c *Config) { c.Endpoint = ":9999" }, `host is empty`},
		{"no token", func(c *Config) { c.Token = "" }, "token: token is empty"},
		{"token with newline", func(c *Config) { c.Token = "a\nb" }, "line break"},
		{"negative timeout", func(c *Config) { c.ReadTimeout = -time.Second }, "read timeout -1s must be positive"},
		{"backoffs crossed", func(c *Config) { c.InitialBackoff, c.MaxBackoff = time.Second, time.Millisecond }, "below initial backoff"},
		{"in flight too high", func(c *Config) { c.MaxInFlight = 5000 }, "max in flight 5000"},
		{"negative attempts", func(c *Config) { c.MaxBatchSendAttempts = -1 }, "max batch send attempts"},
		{"negative cycles", func(c *Config) { c.MaxReconnectCycles = -1 }, "max reconnect cycles"},
	}
	for _, tt := range tests {
		c := ok
		tt.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tt.name, err, tt.want)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted the config", tt.name)
		}
	}
	c := ok
	c.Token = "s3cr3t-token\n"
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("validation error leaks the token: %v", err)
	}
}
