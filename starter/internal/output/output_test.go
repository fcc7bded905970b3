package output

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/console"
)

const (
	secretToken = "tok-SECRET-4711"
	// 32 bytes, base64.
	secretKey = "c2VjcmV0LWtleS0zMi1ieXRlcy1sb25nLWZvci10c3Q="
)

func TestRegistry(t *testing.T) {
	r := NewRegistry(NewTransportFactory(), NewConsoleFactory(nil))
	if got := strings.Join(r.Types(), ","); got != "console,transport" {
		t.Errorf("Types = %s", got)
	}
	for _, typ := range []string{"console", "TRANSPORT", " transport "} {
		if _, err := r.Get(typ); err != nil {
			t.Errorf("Get(%q): %v", typ, err)
		}
	}
	_, err := r.Get("kafka")
	if !errors.Is(err, ErrUnknownType) || err.Error() != `unknown output type "kafka" (known: console, transport)` {
		t.Errorf("Get(kafka) = %v", err)
	}
}

func validTransport() *TransportConfig {
	c := NewTransportConfig()
	c.Client.Endpoint, c.Client.Token = "127.0.0.1:1", secretToken
	return c
}

// parse sets a name the way the config decoder does.
func parse(t *testing.T, u interface{ UnmarshalText([]byte) error }, s string) {
	t.Helper()
	if err := u.UnmarshalText([]byte(s)); err != nil {
		t.Fatalf("UnmarshalText(%q) = %v: the error must wait for Validate", s, err)
	}
}

// keys lists the FieldKey of every problem in err, in order.
func keys(err error) []string {
	var out []string
	for _, e := range unjoin(err) {
		var fe *transport.FieldError
		if errors.As(e, &fe) {
			out = append(out, fe.FieldKey())
		} else if e != nil {
			out = append(out, "?"+e.Error())
		}
	}
	return out
}

func TestTransportConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(t *testing.T, c *TransportConfig)
		want string // the keys of the problems, comma-separated
	}{
		{"defaults with endpoint and token", func(*testing.T, *TransportConfig) {}, ""},
		{"the client's checks", func(_ *testing.T, c *TransportConfig) {
			c.Client.Endpoint, c.Client.Token, c.Client.MaxInFlight = "", "", 0
		}, "endpoint,token,max-in-flight"},
		{"a token from a file is the file's problem", func(_ *testing.T, c *TransportConfig) {
			c.TokenFile, c.Client.Token = "/t", ""
		}, "token-file"},
		{"auth-type", func(_ *testing.T, c *TransportConfig) { c.AuthType = "none" }, "auth-type"},
		{"auth-type any case", func(_ *testing.T, c *TransportConfig) { c.AuthType = " TOKEN " }, ""},
		{"tls keys under tls", func(_ *testing.T, c *TransportConfig) {
			c.TLS = client.TLSOptions{Enabled: true, CertFile: "c.pem"}
		}, "tls.key-file"},
		{"on-refusal exit, any case", func(t *testing.T, c *TransportConfig) { parse(t, &c.OnRefusal, " EXIT ") }, ""},
		{"unknown on-refusal", func(t *testing.T, c *TransportConfig) { parse(t, &c.OnRefusal, "ignore") }, "on-refusal"},
		{"on-refusal left empty in code", func(_ *testing.T, c *TransportConfig) { c.OnRefusal = "" }, "on-refusal"},
		{"tls off ignores its files", func(_ *testing.T, c *TransportConfig) { c.TLS.CertFile = "c.pem" }, ""},
		{"unknown packet mode", func(t *testing.T, c *TransportConfig) { parse(t, &c.PacketMode, "udp") }, "packet-mode"},
		{"RAW ignores compression, encryption and key", func(t *testing.T, c *TransportConfig) {
			parse(t, &c.Compression, "zstd")
			parse(t, &c.Encryption, "rot13")
			c.AESSecretKeyBase64, c.AESSecretKeyFile = "short", "/k"
		}, ""},
		{"PACKET checks the names", func(t *testing.T, c *TransportConfig) {
			parse(t, &c.PacketMode, "packet")
			parse(t, &c.Compression, "zstd")
			parse(t, &c.Encryption, "rot13")
		}, "compression,encryption"},
		{"PACKET needs the key", func(t *testing.T, c *TransportConfig) {
			parse(t, &c.PacketMode, "PACKET")
			parse(t, &c.Encryption, "aes_gcm")
		}, "aes-secret-key-base64"},
		{"a key from a file is the file's problem", func(t *testing.T, c *TransportConfig) {
			parse(t, &c.PacketMode, "PACKET")
			parse(t, &c.Encryption, "aes_gcm")
			c.AESSecretKeyFile, c.AESSecretKeyBase64 = "/k", "c2hvcnQ="
		}, "aes-secret-key-file"},
		{"PACKET with a good key", func(t *testing.T, c *TransportConfig) {
			parse(t, &c.PacketMode, "PACKET")
			parse(t, &c.Encryption, "chacha20_poly1305")
			c.AESSecretKeyBase64 = strings.TrimRight(secretKey, "=")
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validTransport()
			tt.mut(t, c)
			err := c.Validate()
			if got := strings.Join(keys(err), ","); got != tt.want {
				t.Errorf("problems at %q, want %q: %v", got, tt.want, err)
			}
			if err != nil && (strings.Contains(err.Error(), secretToken) || strings.Contains(err.Error(), secretKey[:16])) {
				t.Errorf("a secret in %v", err)
			}
		})
	}
}

// Switching output.type to console keeps every transport key: only the
// numbers are checked, as they are wrong even while unused.
func TestConsoleConfig(t *testing.T) {
	c := NewConsoleConfig()
	tc := &c.Transport
	tc.Client.Endpoint, tc.AuthType, tc.TokenFile = "nonsense", "none", "/does/not/exist"
	parse(t, &tc.PacketMode, "udp")
	parse(t, &tc.Compression, "zstd")
	tc.TLS = client.TLSOptions{Enabled: true, CertFile: "c.pem"}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	tc.Client.ConnectTimeout, tc.Client.MaxInFlight = 0, client.MaxInFlightLimit+1
	if got := strings.Join(keys(c.Validate()), ","); got != "connect-timeout-ms,max-in-flight" {
		t.Errorf("problems at %q", got)
	}
	var cfg Config = c
	if _, ok := cfg.(SecretFiles); ok {
		t.Error("console reads secret files")
	}
}

func TestPacing(t *testing.T) {
	for _, cfg := range []Config{NewTransportConfig(), NewConsoleConfig()} {
		d := client.DefaultConfig()
		want := Pacing{MaxInFlight: d.MaxInFlight, InitialBackoff: d.InitialBackoff, MaxBackoff: d.MaxBackoff, OnRefusal: RefusalRetry}
		if got := cfg.Pacing(); got != want {
			t.Errorf("%T: Pacing = %+v, want %+v", cfg, got, want)
		}
	}
	c := NewTransportConfig()
	c.Client.MaxInFlight, c.Client.MaxBackoff, c.OnRefusal = 1, time.Second, RefusalExit
	if p := c.Pacing(); p.MaxInFlight != 1 || p.MaxBackoff != time.Second || p.OnRefusal != RefusalExit {
		t.Errorf("Pacing = %+v", p)
	}
}

func TestRedacted(t *testing.T) {
	c := validTransport()
	c.AESSecretKeyBase64 = secretKey
	for _, cfg := range []Config{c, &ConsoleConfig{Transport: *c}} {
		r := cfg.Redacted()
		if s := fmt.Sprintf("%+v", r); strings.Contains(s, secretToken) || strings.Contains(s, secretKey) || !strings.Contains(s, RedactedValue) {
			t.Errorf("%T: not redacted: %s", cfg, s)
		}
	}
	if c.Client.Token != secretToken || c.AESSecretKeyBase64 != secretKey {
		t.Error("Redacted changed the original")
	}
	if r := NewTransportConfig().Redacted().(*TransportConfig); r.Client.Token != "" || r.AESSecretKeyBase64 != "" {
		t.Errorf("unset secrets redacted: %+v", r)
	}
}

func TestSecretFiles(t *testing.T) {
	c := validTransport()
	c.TokenFile, c.AESSecretKeyFile = "/t", "/k"
	if got := c.SecretFiles(); len(got) != 1 || got[0].FileKey != "token-file" || got[0].File != "/t" || got[0].Value != &c.Client.Token {
		t.Errorf("RAW: %+v", got)
	}
	parse(t, &c.PacketMode, "PACKET")
	parse(t, &c.Encryption, "aes_gcm")
	got := c.SecretFiles()
	if len(got) != 2 || got[1].FileKey != "aes-secret-key-file" || got[1].Value != &c.AESSecretKeyBase64 {
		t.Errorf("PACKET aes_gcm: %+v", got)
	}
}

func TestAnchorPathsAndAdvice(t *testing.T) {
	c := validTransport()
	c.TokenFile, c.TLS.CAFile, c.AESSecretKeyFile = "config/token", "/etc/ca.pem", ""
	c.AnchorPaths("/opt/edge")
	if c.TokenFile != "/opt/edge/config/token" || c.TLS.CAFile != "/etc/ca.pem" || c.AESSecretKeyFile != "" {
		t.Errorf("anchored: %+v %+v", c.TokenFile, c.TLS)
	}
	if a := c.Advice(); len(a) != 0 {
		t.Errorf("advice for a sane config: %v", a)
	}
	c.Client.Endpoint = "0.0.0.0:9999"
	c.TLS.Enabled, c.TLS.InsecureSkipVerify = true, true
	if got := strings.Join(keys(errors.Join(c.Advice()...)), ","); got != "endpoint,tls.insecure-skip-verify" {
		t.Errorf("advice at %q", got)
	}
}

func TestCreate(t *testing.T) {
	set := Settings{ID: "out-1"}
	raw := validTransport()
	snd, enc, err := NewTransportFactory().Create(raw, set)
	if err != nil || enc != nil {
		t.Fatalf("RAW: %v, encoder %v", err, enc)
	}
	if _, ok := snd.(*client.Client); !ok {
		t.Errorf("sender is %T", snd)
	}
	_ = snd.Close()

	packet := validTransport()
	parse(t, &packet.PacketMode, "PACKET")
	parse(t, &packet.Encryption, "aes_gcm")
	packet.AESSecretKeyBase64 = secretKey
	snd, enc, err = NewTransportFactory().Create(packet, set)
	if err != nil {
		t.Fatal(err)
	}
	_ = snd.Close()
	if _, ok := enc.(*codec.Encoder); !ok {
		t.Fatalf("PACKET encoder is %T", enc)
	}
	out, err := enc.Encode(nil, []byte(`{"a":1}`))
	if err != nil || !strings.Contains(string(out), `"encryption":"aes_gcm"`) || !strings.Contains(string(out), `"compression":"gzip"`) {
		t.Errorf("Encode = %s, %v", out, err)
	}

	// A config built in code is checked: Create refuses what Load would.
	bad := validTransport()
	bad.Client.MaxInFlight = 0
	if _, _, err := NewTransportFactory().Create(bad, set); err == nil || !strings.Contains(err.Error(), "max-in-flight") {
		t.Errorf("Create(bad) = %v", err)
	}
	if _, _, err := NewTransportFactory().Create(NewConsoleConfig(), set); err == nil {
		t.Error("transport accepted a console config")
	}

	var stdout bytes.Buffer
	snd, enc, err = NewConsoleFactory(&stdout).Create(NewConsoleConfig(), set)
	if _, ok := snd.(*console.Sender); !ok || enc != nil || err != nil {
		t.Fatalf("console: %T, %v, %v", snd, enc, err)
	}
	// The sender writes to the writer the factory was given.
	if _, err := snd.Send(context.Background(), []transport.Batch{{ID: 1, Payload: []byte(`{"a":1}`)}}); err != nil || stdout.String() != "{\"a\":1}\n" {
		t.Errorf("console wrote %q, %v", stdout.String(), err)
	}
}
