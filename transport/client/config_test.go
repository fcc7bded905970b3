package client

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
)

func TestDefaultConfigIsTheJavaAgents(t *testing.T) {
	d := DefaultConfig()
	if d.ConnectTimeout != 5*time.Second || d.ReadTimeout != 30*time.Second || d.MaxBatchSendAttempts != 64 ||
		d.InitialBackoff != 100*time.Millisecond || d.MaxBackoff != 30*time.Second ||
		d.MaxReconnectCycles != 16 || d.MaxInFlight != 32768 {
		t.Fatalf("DefaultConfig = %+v", d)
	}
}

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Endpoint, ok.Token = "engine.example:9999", "t"
	if err := ok.Validate(); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	tests := []struct {
		name string
		mut  func(*Config)
		key  string // the agent.yaml key the problem is filed under
		want string
	}{
		{"no endpoint", func(c *Config) { c.Endpoint = "" }, "endpoint", "required: host:port"},
		{"blank endpoint", func(c *Config) { c.Endpoint = "  " }, "endpoint", "required: host:port"},
		{"no port", func(c *Config) { c.Endpoint = "engine.example" }, "endpoint", `expected host:port, got "engine.example"`},
		{"empty port", func(c *Config) { c.Endpoint = "engine.example:" }, "endpoint", `invalid port in "engine.example:": must be 1..65535`},
		{"port 0", func(c *Config) { c.Endpoint = "h:0" }, "endpoint", `invalid port in "h:0"`},
		{"port too big", func(c *Config) { c.Endpoint = "h:65536" }, "endpoint", `invalid port in "h:65536"`},
		{"port not a number", func(c *Config) { c.Endpoint = "h:http" }, "endpoint", `invalid port in "h:http"`},
		{"no host", func(c *Config) { c.Endpoint = ":9999" }, "endpoint", `expected host:port, got ":9999"`},
		{"no token", func(c *Config) { c.Token = "" }, "token", "token is empty"},
		{"blank token", func(c *Config) { c.Token = "  " }, "token", "token is empty"},
		{"token with newline", func(c *Config) { c.Token = "a\nb" }, "token", "line break"},
		{"zero connect timeout", func(c *Config) { c.ConnectTimeout = 0 }, "connect-timeout-ms", "must be > 0, got 0"},
		{"negative read timeout", func(c *Config) { c.ReadTimeout = -time.Second }, "read-timeout-ms", "must be > 0, got -1000"},
		{"zero attempts", func(c *Config) { c.MaxBatchSendAttempts = 0 }, "max-batch-send-attempts", "must be > 0, got 0"},
		{"zero initial backoff", func(c *Config) { c.InitialBackoff = 0 }, "initial-backoff-ms", "must be > 0, got 0"},
		{"zero max backoff", func(c *Config) { c.MaxBackoff = 0 }, "max-backoff-ms", "must be > 0, got 0"},
		{"backoffs crossed", func(c *Config) { c.InitialBackoff, c.MaxBackoff = time.Second, time.Millisecond },
			"max-backoff-ms", "must be >= initial-backoff-ms (1000), got 1"},
		{"negative cycles", func(c *Config) { c.MaxReconnectCycles = -1 }, "max-reconnect-cycles", "must be > 0, got -1"},
		{"in flight 0", func(c *Config) { c.MaxInFlight = 0 }, "max-in-flight", "must be between 1 and 65536, got 0"},
		{"in flight too high", func(c *Config) { c.MaxInFlight = MaxInFlightLimit + 1 }, "max-in-flight", "must be between 1 and 65536, got 65537"},
	}
	for _, tt := range tests {
		c := ok
		tt.mut(&c)
		err := c.Validate()
		var fe *transport.FieldError
		if !errors.As(err, &fe) || fe.FieldKey() != tt.key || !strings.Contains(fe.Unwrap().Error(), tt.want) {
			t.Errorf("%s: err = %v, want %s: ...%s", tt.name, err, tt.key, tt.want)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted the config", tt.name)
		}
	}
	c := ok
	c.Token = "s3cr3t\r\ntoken"
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("validation error leaks the token: %v", err)
	}
	// Every problem at once, each under its own key.
	c = Config{}
	var keys []string
	for _, e := range unjoin(c.Validate()) {
		var fe *transport.FieldError
		if errors.As(e, &fe) {
			keys = append(keys, fe.FieldKey())
		}
	}
	want := []string{"endpoint", "token", "connect-timeout-ms", "read-timeout-ms", "max-batch-send-attempts",
		"initial-backoff-ms", "max-backoff-ms", "max-reconnect-cycles", "commit-every", "max-in-flight"}
	if !slices.Equal(keys, want) {
		t.Errorf("zero Config: keys %v, want %v", keys, want)
	}
}

// The tuning alone: what a caller that keeps the settings without
// sending checks.
func TestValidateTuningIgnoresAddress(t *testing.T) {
	if err := DefaultConfig().ValidateTuning(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	c := DefaultConfig()
	c.MaxInFlight = 0
	if err := c.ValidateTuning(); err == nil || !strings.Contains(err.Error(), "max-in-flight") {
		t.Errorf("ValidateTuning = %v", err)
	}
}

// New trims the endpoint and token, as the Java agent does.
func TestNewTrims(t *testing.T) {
	c := DefaultConfig()
	c.Endpoint, c.Token = " 127.0.0.1:9 ", " tok\t"
	cl, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if cl.cfg.Endpoint != "127.0.0.1:9" || cl.cfg.Token != "tok" {
		t.Errorf("endpoint %q, token %q", cl.cfg.Endpoint, cl.cfg.Token)
	}
}

// unjoin undoes errors.Join, nested or not.
func unjoin(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == nil {
			return nil
		}
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, unjoin(e)...)
	}
	return out
}
