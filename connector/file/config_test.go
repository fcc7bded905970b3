package file

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// Java parity §1.4.
func TestConfigDefaults(t *testing.T) {
	c := NewDefaultConfig()
	c.Paths = []string{"/var/log/*.log"}
	if err := c.Validate(); err != nil {
		t.Fatalf("minimal config invalid: %v", err)
	}
	if c.Encoding != "UTF-8" || c.GlobScanInterval != 5*time.Second || c.OnError != "skip" || c.ReadFromBeginning ||
		c.CloseInactive != 5*time.Minute || c.Multiline.Match != "after" || c.Multiline.Negate ||
		c.Multiline.MaxLines != 500 || c.Multiline.FlushIdleTimeout != 5*time.Second || c.OutputFormat.Type != "line" {
		t.Fatalf("defaults %+v", c)
	}
}

func TestConfigRejects(t *testing.T) {
	cases := []struct {
		key    string
		mutate func(c *Config)
	}{
		{"paths", func(c *Config) { c.Paths = nil }},
		{"paths[1]", func(c *Config) { c.Paths = append(c.Paths, " ") }},
		{"encoding", func(c *Config) { c.Encoding = "NOT_A_REAL_CHARSET_XYZ" }},
		{"on-error", func(c *Config) { c.OnError = "ignore" }},
		{"multiline.pattern", func(c *Config) { c.Multiline.Pattern = "([" }},
		{"multiline.flush-idle-timeout-ms", func(c *Config) { c.Multiline.Pattern = "x"; c.Multiline.FlushIdleTimeout = 0 * time.Millisecond }},
		{"multiline.match", func(c *Config) { c.Multiline.Match = "around" }},
		{"output-format.type", func(c *Config) { c.OutputFormat.Type = "xml" }},
		{"max-line-bytes", func(c *Config) { c.MaxLineBytes = 1 }},
		{"fingerprint-bytes", func(c *Config) { c.FingerprintBytes = 0 }},
		{"paths[1]", func(c *Config) { c.Paths = append(c.Paths, "/var/log/[") }},
		{"exclude[0]", func(c *Config) { c.Exclude = []string{"{a"} }},
	}
	for _, tc := range cases {
		c := NewDefaultConfig()
		c.Paths = []string{"/var/log/*.log"}
		tc.mutate(c)
		err := c.Validate()
		var fe *input.FieldError
		if !errors.As(err, &fe) || fe.Key != tc.key {
			t.Errorf("%s: got %v", tc.key, err)
		}
	}
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	reg := input.NewRegistry(f)
	got, err := reg.Get("FILE")
	if err != nil || got.Type() != "file" {
		t.Fatalf("registry: %v", err)
	}
	cfg := f.NewDefaultConfig().(*Config)
	cfg.Paths = []string{t.TempDir()}
	cfg.OutputFormat.Type = "json"
	in, err := f.Create(cfg, input.Settings{ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := in.(input.StatsReporter); !ok {
		t.Fatal("file input does not expose Stats")
	}
	must(t, in.Close())
	must(t, in.Close()) // idempotent
	if _, err := f.Create(struct{ input.Config }{}, input.Settings{}); err == nil || !strings.Contains(err.Error(), "*file.Config") {
		t.Fatalf("wrong config type: %v", err)
	}
	bad := f.NewDefaultConfig()
	if _, err := f.Create(bad, input.Settings{}); err == nil {
		t.Fatal("invalid config accepted")
	}
}
