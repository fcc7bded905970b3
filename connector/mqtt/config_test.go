package mqtt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

func TestValidate(t *testing.T) {
	ok := func(c *Config) { c.Brokers, c.Topics = []string{"tcp://127.0.0.1:1883"}, []string{"site/#"} }
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		key  string // "" = valid
		want string
	}{
		{"defaults with broker and topic", func(*Config) {}, "", ""},
		{"no broker", func(c *Config) { c.Brokers = nil }, "brokers", "at least one"},
		{"bad scheme", func(c *Config) { c.Brokers = []string{"http://h:1"} }, "brokers[0]", "scheme"},
		{"no port", func(c *Config) { c.Brokers = []string{"tcp://h"} }, "brokers[0]", "port"},
		{"tls scheme", func(c *Config) { c.Brokers = []string{"mqtts://h:8883"} }, "", ""},
		{"no topic", func(c *Config) { c.Topics = nil }, "topics", "at least one"},
		{"# not last", func(c *Config) { c.Topics = []string{"a/#/b"} }, "topics[0]", "last level"},
		{"+ in a level", func(c *Config) { c.Topics = []string{"a/b+/c"} }, "topics[0]", "whole level"},
		{"# in a level", func(c *Config) { c.Topics = []string{"a/b#"} }, "topics[0]", "whole level"},
		{"empty filter", func(c *Config) { c.Topics = []string{""} }, "topics[0]", "not empty"},
		{"wildcards", func(c *Config) { c.Topics = []string{"+/+/temp", "#", "a/+"} }, "", ""},
		{"qos 3", func(c *Config) { c.QoS = 3 }, "qos", "0, 1 or 2"},
		{"password without user", func(c *Config) { c.Password = "x" }, "username", "needs a username"},
		{"missing password file", func(c *Config) { c.Username, c.PasswordFile = "u", "/nonexistent/pw" }, "password-file", "cannot read"},
		{"cert without key", func(c *Config) { c.TLS.CertFile = "/x.crt" }, "tls", "go together"},
		{"missing ca", func(c *Config) { c.TLS.CAFile = "/nonexistent/ca" }, "tls.ca-file", "cannot read"},
		{"payload", func(c *Config) { c.Payload = "xml" }, "payload", "text or json"},
		{"topic-field quote", func(c *Config) { c.TopicField = `a"b` }, "topic-field", "plain key"},
		{"pending too small", func(c *Config) { c.MaxPendingBytes = 10 }, "max-pending-bytes", "between"},
		{"keep-alive", func(c *Config) { c.KeepAlive = 0 }, "keep-alive-ms", "at least"},
		{"mqtt 5", func(c *Config) { c.ProtocolVersion = Protocol5 }, "", ""},
		{"mqtt 5 session ends with the connection", func(c *Config) { c.ProtocolVersion, c.SessionExpiry = Protocol5, 0 }, "", ""},
		{"protocol 4", func(c *Config) { c.ProtocolVersion = "4" }, "protocol-version", "3.1.1 or 5"},
		{"protocol empty", func(c *Config) { c.ProtocolVersion = "" }, "protocol-version", "3.1.1 or 5"},
		{"session expiry in ms", func(c *Config) { c.SessionExpiry = 1500 * time.Millisecond }, "session-expiry-ms", "whole seconds"},
		{"session expiry negative", func(c *Config) { c.SessionExpiry = -time.Second }, "session-expiry-ms", "between 0"},
		{"session expiry past MQTT's", func(c *Config) { c.SessionExpiry = maxSessionExpiry + time.Second }, "session-expiry-ms", "between 0"},
		{"session expiry never", func(c *Config) { c.SessionExpiry = maxSessionExpiry }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewDefaultConfig()
			ok(c)
			tc.mod(c)
			err := c.Validate()
			if tc.key == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var fe *input.FieldError
			if !errors.As(err, &fe) || fe.Key != tc.key || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %s: …%s…, got %v", tc.key, tc.want, err)
			}
		})
	}
}

// Redacted hides the password and a URL's credentials; Sources and
// Advice never show either.
func TestSecretsStayHidden(t *testing.T) {
	c := NewDefaultConfig()
	c.Brokers = []string{"tcp://user:pw-in-url@192.0.2.1:1883"}
	c.Topics = []string{"a"}
	c.Username, c.Password = "u", "s3cret"
	r := c.Redacted().(*Config)
	all := r.Password + strings.Join(r.Brokers, " ") + strings.Join(c.Sources(), " ")
	for _, a := range c.Advice() {
		all += a.Error()
	}
	for _, secret := range []string{"s3cret", "pw-in-url"} {
		if strings.Contains(all, secret) {
			t.Fatalf("%q shown: %s", secret, all)
		}
	}
	if len(c.Advice()) != 1 {
		t.Fatalf("a password to a remote broker without TLS: want one warning, got %v", c.Advice())
	}
}

// An MQTT 5 session that ends with the connection is warned about.
func TestAdviceSessionExpiry(t *testing.T) {
	c := NewDefaultConfig()
	c.Brokers, c.Topics = []string{"tcp://127.0.0.1:1883"}, []string{"a"}
	if a := c.Advice(); len(a) != 0 {
		t.Fatalf("defaults: %v", a)
	}
	c.ProtocolVersion, c.SessionExpiry = Protocol5, 0
	if a := c.Advice(); len(a) != 1 || a[0].Key != "session-expiry-ms" {
		t.Fatalf("mqtt 5, expiry 0: %v", a)
	}
	c.ProtocolVersion = Protocol311
	if a := c.Advice(); len(a) != 0 {
		t.Fatalf("mqtt 3.1.1 has no expiry: %v", a)
	}
}
