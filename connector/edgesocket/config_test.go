package edgesocket

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/codec"
)

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodFile := write("tokens", "# fleet\nedge-7 secret-seven\n\n  edge-8   secret eight  \n")
	oneWord := write("bad", "edge-9\n")
	dupFile := write("dup", "edge-1 dup-secret\n")
	tests := []struct {
		name    string
		mut     func(c *Config)
		wantKey string // "" means valid
		want    string
	}{
		{"defaults with a token", func(c *Config) {}, "", ""},
		{"no token", func(c *Config) { c.Tokens = nil }, "tokens", "at least one"},
		{"tokens file only", func(c *Config) { c.Tokens = nil; c.TokensFile = goodFile }, "", ""},
		{"tokens file missing", func(c *Config) { c.TokensFile = filepath.Join(dir, "nope") }, "tokens-file", "cannot read"},
		{"tokens file line of one word", func(c *Config) { c.TokensFile = oneWord }, "tokens-file", "line 1"},
		{"a name in both", func(c *Config) { c.TokensFile = dupFile }, "tokens-file (" + dupFile + " line 1)", "already given"},
		{"token file wins", func(c *Config) { c.Tokens[0].TokenFile = write("t1", "from-file\n") }, "", ""},
		{"token file missing", func(c *Config) { c.Tokens[0].TokenFile = filepath.Join(dir, "gone") }, "tokens[0].token-file", "cannot read"},
		{"same token twice", func(c *Config) { c.Tokens[1].Token = c.Tokens[0].Token }, "tokens[1]", "also the token"},
		{"empty name", func(c *Config) { c.Tokens[0].Name = " " }, "tokens[0]", "name is empty"},
		{"non-loopback without tls", func(c *Config) { c.Listen = "0.0.0.0:9700" }, "listen", "allow-plaintext"},
		{"non-loopback opted out", func(c *Config) { c.Listen = "0.0.0.0:9700"; c.AllowPlaintext = true }, "", ""},
		{"listen without port", func(c *Config) { c.Listen = "127.0.0.1" }, "listen", "host:port"},
		{"cert without key", func(c *Config) { c.TLS.CertFile = "c.pem" }, "tls", "go together"},
		{"client ca without tls", func(c *Config) { c.TLS.ClientCAFile = "ca.pem" }, "tls.client-ca-file", "mTLS"},
		{"bad key", func(c *Config) { c.PacketMode = codec.ModePacket; c.AESSecretKeyBase64 = "c2hvcnQ=" }, "aes-secret-key-base64", "32"},
		{"key ignored in RAW", func(c *Config) { c.AESSecretKeyBase64 = "c2hvcnQ=" }, "", ""},
		{"max connections 0", func(c *Config) { c.MaxConnections = 0 }, "max-connections", "between"},
		{"max line bytes small", func(c *Config) { c.MaxLineBytes = 10 }, "max-line-bytes", "between"},
		{"read timeout 0", func(c *Config) { c.ReadTimeout = 0 }, "read-timeout-ms", "> 0"},
		{"auth timeout 0", func(c *Config) { c.AuthTimeout = 0 }, "auth-timeout-ms", "> 0"},
		{"auth timeout over a minute", func(c *Config) { c.AuthTimeout = 2 * time.Minute }, "auth-timeout-ms", "at most 60000"},
		{"auth timeout not below idle", func(c *Config) { c.AuthTimeout = 30 * time.Second; c.IdleTimeout = 30 * time.Second }, "auth-timeout-ms", "below idle-timeout-ms"},
		{"no unauthenticated budget", func(c *Config) { c.MaxUnauthenticated = 0 }, "max-unauthenticated", "between"},
		{"per-source share above the budget", func(c *Config) { c.MaxUnauthenticatedPerSource = c.MaxUnauthenticated + 1 }, "max-unauthenticated-per-source", "between"},
		{"fail delay above its max", func(c *Config) { c.AuthFailDelay = 10 * time.Second }, "auth-fail-delay-ms", "at most 5000"},
		{"fail delay max over a minute", func(c *Config) { c.AuthFailDelayMax = 2 * time.Minute }, "auth-fail-delay-max-ms", "at most 60000"},
		{"auth log interval 0", func(c *Config) { c.AuthLogInterval = 0 }, "auth-log-interval-ms", "> 0"},
		{"allow-unencrypted in RAW", func(c *Config) { c.AllowUnencrypted = true }, "allow-unencrypted", "PACKET with a key"},
		{"allow-unencrypted with a key", func(c *Config) {
			c.PacketMode, c.AESSecretKeyBase64, c.AllowUnencrypted = codec.ModePacket, "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", true
		}, "", ""},
		{"unknown add-field", func(c *Config) { c.AddFields = []string{"host"} }, "add-fields[0]", "token-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			tt.mut(c)
			err := c.Validate()
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *input.FieldError
			if !errors.As(err, &fe) || fe.Key != tt.wantKey || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want key %q with %q", err, tt.wantKey, tt.want)
			}
			for _, secret := range []string{"tok-1", "tok-2", "secret-seven", "dup-secret"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error quotes a token: %v", err)
				}
			}
		})
	}
}

func TestTokensFromFileAndInline(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte("edge-7 secret-seven\nedge-8\tsecret eight \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testConfig()
	c.TokensFile = p
	got, err := c.tokens(readFile)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for _, tk := range got {
		pairs = append(pairs, tk.Name+"="+tk.Value)
	}
	if strings.Join(pairs, ",") != "edge-1=tok-1,edge-2=tok-2,edge-7=secret-seven,edge-8=secret eight" {
		t.Fatalf("tokens = %v", pairs)
	}
}

func TestRedactedHidesTokensAndKey(t *testing.T) {
	c := testConfig()
	c.AESSecretKeyBase64 = "k"
	r := c.Redacted().(*Config)
	if r.Tokens[0].Token != input.RedactedValue || r.AESSecretKeyBase64 != input.RedactedValue || r.Tokens[0].Name != "edge-1" {
		t.Fatalf("Redacted = %+v", r)
	}
	if c.Tokens[0].Token != "tok-1" {
		t.Fatal("Redacted changed the original")
	}
}

func TestAnchorPaths(t *testing.T) {
	c := testConfig()
	c.TokensFile, c.Tokens[0].TokenFile, c.TLS.CertFile = "config/tokens", "/abs/t", "certs/c.pem"
	c.AnchorPaths("/opt/edge")
	if c.TokensFile != "/opt/edge/config/tokens" || c.Tokens[0].TokenFile != "/abs/t" || c.TLS.CertFile != "/opt/edge/certs/c.pem" {
		t.Fatalf("anchored: %q %q %q", c.TokensFile, c.Tokens[0].TokenFile, c.TLS.CertFile)
	}
}

// FuzzParseTokensFile: any bytes parse or fail without panicking; every
// pair has a name without white space and a trimmed, non-empty token; an
// error never quotes a line (it may hold a token).
func FuzzParseTokensFile(f *testing.F) {
	for _, s := range []string{"a b\n", "# c\n\n a  b c \n", "one\n", "a\tb\r\nc d", "\x00 \xff\n", strings.Repeat("x", 70000) + " y\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pairs, err := parseTokensFile(b)
		for _, p := range pairs {
			if p.name == "" || strings.ContainsAny(p.name, " \t\r\n") || p.token == "" || strings.TrimSpace(p.token) != p.token {
				t.Fatalf("pair %+v", p)
			}
		}
		if err != nil {
			for _, line := range strings.Split(string(b), "\n") {
				if w := strings.TrimSpace(line); len(w) >= 8 && strings.Contains(err.Error(), w) {
					t.Fatalf("error %q quotes the line %q", err, w)
				}
			}
		}
	})
}
