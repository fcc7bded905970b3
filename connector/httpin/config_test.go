package httpin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		key  string
		want string
	}{
		{"defaults", func(*Config) {}, "", ""},
		{"listen", func(c *Config) { c.Listen = "8088" }, "listen", "host:port"},
		{"path", func(c *Config) { c.Path = "ingest" }, "path", "start with /"},
		{"token file", func(c *Config) { c.BearerTokenFile = "/nonexistent/tok" }, "bearer-token-file", "cannot read"},
		{"cert without key", func(c *Config) { c.TLS.CertFile = "/x" }, "tls", "go together"},
		{"client ca without tls", func(c *Config) { c.TLS.ClientCAFile = "/x" }, "tls.client-ca-file", "mTLS is TLS first"},
		{"body too small", func(c *Config) { c.MaxBodyBytes = 10 }, "max-body-bytes", "between"},
		{"pending below body", func(c *Config) { c.MaxBodyBytes, c.MaxPendingBytes = 8<<20, 4<<20 }, "max-pending-bytes", "between"},
		{"retry-after", func(c *Config) { c.RetryAfter = 10 * time.Millisecond }, "retry-after-ms", "whole seconds"},
		{"commit above write", func(c *Config) { c.CommitTimeout = time.Hour }, "commit-timeout-ms", "below write-timeout-ms"},
		{"zero timeout", func(c *Config) { c.ReadHeaderTimeout = 0 }, "read-header-timeout-ms", "> 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewDefaultConfig()
			tc.mod(c)
			err := c.Validate()
			if tc.key == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *input.FieldError
			if !errors.As(err, &fe) || fe.Key != tc.key || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %s: …%s…, got %v", tc.key, tc.want, err)
			}
		})
	}
	c := NewDefaultConfig()
	c.Listen, c.BearerToken = "0.0.0.0:8088", "s3cret"
	if a := c.Advice(); len(a) != 1 || a[0].Key != "listen" {
		t.Fatalf("advice for a plain listener on every interface: %v", a)
	}
	if r := c.Redacted().(*Config); strings.Contains(r.BearerToken, "s3cret") {
		t.Fatal("Redacted shows the token")
	}
}
