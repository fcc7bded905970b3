package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

const (
	testToken = "tok-SECRET-4711"
	// 32 bytes, base64: a valid key whose text must never leak.
	testKey = "c2VjcmV0LWtleS0zMi1ieXRlcy1sb25nLWZvci10c3Q="
)

func TestTokenFile(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "token"), []byte("\n  "+testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(text string) (*Config, []Warning, error) {
		return Load(writeConfig(t, text), LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, Home: home})
	}
	transport := "output:\n  type: transport\n  endpoint: h:1\n"

	t.Run("relative to home, trimmed", func(t *testing.T) {
		cfg, warns, err := load(transport + "  token-file: config/token\n" + minimal)
		if err != nil {
			t.Fatal(err)
		}
		if o := transportOf(t, cfg); o.Client.Token != testToken || o.TokenFile != filepath.Join(home, "config", "token") || len(warns) != 0 {
			t.Errorf("token %q file %q warnings %v", o.Client.Token, o.TokenFile, warns)
		}
	})
	t.Run("wins over token, with a warning", func(t *testing.T) {
		cfg, warns, err := load(transport + "  token: inline\n  token-file: config/token\n" + minimal)
		if err != nil {
			t.Fatal(err)
		}
		if o := transportOf(t, cfg); o.Client.Token != testToken || len(warns) != 1 || !strings.Contains(warns[0].String(), "agent.yaml:4:3: output.token is ignored") {
			t.Errorf("token %q warnings %v", o.Client.Token, warns)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, _, err := load(transport + "  token-file: config/nope\n" + minimal)
		if err == nil || !strings.Contains(err.Error(), "agent.yaml:4:3: output.token-file: cannot read:") ||
			!errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrInvalid) {
			t.Errorf("err = %v", err)
		}
		if strings.Contains(err.Error(), "token is empty") {
			t.Errorf("repeats the problem: %v", err)
		}
	})
	t.Run("empty file", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(home, "empty"), []byte(" \n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := load(transport + "  token-file: empty\n" + minimal)
		if err == nil || !strings.Contains(err.Error(), "agent.yaml:4:3: output.token-file: token is empty") {
			t.Errorf("err = %v", err)
		}
	})
}

// A token travels on one protocol line: a line break inside it must fail
// `config check` (exit 78) as `start` would, naming the key that holds it
// and never quoting the token.
func TestTokenWithLineBreak(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "two-lines"), []byte(testToken+"\nsecond-half\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	transport := "output:\n  type: transport\n  endpoint: h:1\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"inline", transport + "  token: \"" + testToken + "\\r\\nAUTH:x\"\n", "agent.yaml:4:3: output.token: token contains a line break"},
		{"from a file", transport + "  token-file: two-lines\n", "agent.yaml:4:3: output.token-file: token contains a line break"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Load(writeConfig(t, tc.yaml+minimal), LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, Home: home})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Fatalf("the error quotes the token: %v", err)
			}
		})
	}
}

func TestKeyFile(t *testing.T) {
	home := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("key", testKey+"\n")
	write("short", "c2hvcnQ=\n")
	packet := "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  encryption: aes_gcm\n"
	opts := LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, Home: home}

	cfg, _, err := Load(writeConfig(t, packet+"  aes-secret-key-file: key\n"+minimal), opts)
	if err != nil {
		t.Fatal(err)
	}
	if transportOf(t, cfg).AESSecretKeyBase64 != testKey {
		t.Errorf("key not read from the file")
	}
	_, _, err = Load(writeConfig(t, packet+"  aes-secret-key-file: short\n"+minimal), opts)
	if err == nil || !strings.Contains(err.Error(), "agent.yaml:7:3: output.aes-secret-key-file: key must base64-decode to exactly 32 bytes") {
		t.Errorf("short key file: %v", err)
	}
	// Without its padding (43 characters), as Java's decoder takes it.
	write("unpadded", strings.TrimRight(testKey, "=")+"\n")
	if cfg, _, err := Load(writeConfig(t, packet+"  aes-secret-key-file: unpadded\n"+minimal), opts); err != nil {
		t.Errorf("unpadded key file: %v", err)
	} else if transportOf(t, cfg).AESSecretKeyBase64 != strings.TrimRight(testKey, "=") {
		t.Errorf("unpadded key not read from the file")
	}
	// RAW mode does not read (or check) the key file.
	if _, _, err := Load(writeConfig(t, "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  encryption: aes_gcm\n  aes-secret-key-file: nope\n"+minimal), opts); err != nil {
		t.Errorf("RAW read the key file: %v", err)
	}
}

func TestRedacted(t *testing.T) {
	cfg, _ := mustLoad(t, fmt.Sprintf("output:\n  type: transport\n  endpoint: h:1\n  token: %s\n  packet-mode: PACKET\n  encryption: aes_gcm\n  aes-secret-key-base64: %s\n%s", testToken, testKey, minimal))
	r := cfg.Redacted()
	ro := transportOf(t, r)
	if ro.Client.Token != RedactedValue || ro.AESSecretKeyBase64 != RedactedValue {
		t.Errorf("not redacted: %+v", ro)
	}
	if s := fmt.Sprintf("%+v %+v", *r, *ro); strings.Contains(s, testToken) || strings.Contains(s, testKey) {
		t.Errorf("secret in redacted copy: %s", s)
	}
	if o := transportOf(t, cfg); o.Client.Token != testToken || o.AESSecretKeyBase64 != testKey {
		t.Error("Redacted changed the original")
	}
	// Unset secrets stay visibly unset.
	plain, _ := mustLoad(t, minimal)
	if ro := plain.Redacted().Output.Options.(*output.ConsoleConfig).Transport; ro.Client.Token != "" || ro.AESSecretKeyBase64 != "" {
		t.Errorf("empty secrets redacted: %+v", ro)
	}
	// A console output keeps the transport's keys, secrets included.
	console, _ := mustLoad(t, "output:\n  type: console\n  token: "+testToken+"\n"+minimal)
	if s := fmt.Sprintf("%+v", *console.Redacted().Output.Options.(*output.ConsoleConfig)); strings.Contains(s, testToken) || !strings.Contains(s, RedactedValue) {
		t.Errorf("console config not redacted: %s", s)
	}
}

// TestSecretsNeverInMessages feeds secrets into every failing path that
// could echo a value.
func TestSecretsNeverInMessages(t *testing.T) {
	cases := []string{
		// Wrong key length, bad base64 and a bad endpoint next to them.
		"output:\n  type: transport\n  endpoint: nohost\n  token: " + testToken + "\n  packet-mode: PACKET\n  encryption: aes_gcm\n  aes-secret-key-base64: " + testKey + "AAAA\n" + minimal,
		"output:\n  type: transport\n  endpoint: h:1\n  token: " + testToken + "\n  packet-mode: PACKET\n  encryption: aes_gcm\n  aes-secret-key-base64: '" + testKey + "!'\n" + minimal,
		// Secrets of the wrong type.
		"output:\n  token: {v: " + testToken + "}\n" + minimal,
		"output:\n  token: [" + testToken + "]\n  aes-secret-key-base64: [" + testKey + "]\n" + minimal,
		// A secret under a mistyped key, and one in an env default.
		"output:\n  tokn: " + testToken + "\n" + minimal,
		"output:\n  token: ${" + testToken + "X-Y}\n" + minimal,
		// A syntax error on the token's line.
		"output:\n  token: \"" + testToken + "\n" + minimal,
		"output:\n  token: " + testToken + ": x\n" + minimal,
		// auth-type none keeps the token out too.
		"output:\n  type: transport\n  endpoint: h:1\n  token: " + testToken + "\n  auth-type: none\n" + minimal,
	}
	for i, text := range cases {
		_, warns, err := loadText(t, text)
		if err == nil {
			t.Errorf("case %d: Load succeeded", i)
			continue
		}
		msg := err.Error()
		for _, w := range warns {
			msg += "\n" + w.String()
		}
		if strings.Contains(msg, testToken) || strings.Contains(msg, testKey) {
			t.Errorf("case %d: secret in message:\n%s", i, msg)
		}
	}
	// Warnings about secrets name keys only.
	_, warns, err := Load(writeConfig(t, "output:\n  type: transport\n  endpoint: 0.0.0.0:9999\n  token: "+testToken+"\n  token-file: f\n"+minimal),
		LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, ReadFile: func(p string) ([]byte, error) {
			if filepath.Base(p) == "f" {
				return []byte(testToken + "2"), nil
			}
			return os.ReadFile(p)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 2 {
		t.Errorf("want 2 warnings (token ignored, 0.0.0.0), got %v", warns)
	}
	for _, w := range warns {
		if strings.Contains(w.String(), testToken) {
			t.Errorf("secret in warning %q", w)
		}
	}
}

// Relative input paths mean the same file whatever the working directory:
// systemd starts the agent in /, an operator in their shell.
func TestRelativeInputPathsAnchorAtHome(t *testing.T) {
	home := t.TempDir()
	text := "input:\n  paths: [\"logs/*.log\", \"/var/log/x.log\"]\n  exclude: [\"logs/old.log\"]\n"
	cfg, _, err := Load(writeConfig(t, text), LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	fc := cfg.Inputs[0].Config.(*file.Config)
	if want := filepath.Join(home, "logs/*.log"); fc.Paths[0] != want {
		t.Errorf("paths[0] = %q, want %q", fc.Paths[0], want)
	}
	if fc.Paths[1] != "/var/log/x.log" {
		t.Errorf("absolute path changed: %q", fc.Paths[1])
	}
	if want := filepath.Join(home, "logs/old.log"); fc.Exclude[0] != want {
		t.Errorf("exclude[0] = %q, want %q", fc.Exclude[0], want)
	}
}

// TestHTTPTokenRedacted: http.token is a secret like output.token.
func TestHTTPTokenRedacted(t *testing.T) {
	cfg, _ := mustLoad(t, "http:\n  listen: 0.0.0.0:9466\n  token: "+testToken+"\n"+minimal)
	if r := cfg.Redacted(); r.HTTP.Token != RedactedValue || strings.Contains(fmt.Sprintf("%+v", *r), testToken) {
		t.Errorf("http.token not redacted: %+v", r.HTTP)
	}
	if cfg.HTTP.Token != testToken {
		t.Error("Redacted changed the original")
	}
}
