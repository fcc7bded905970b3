package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestManagementSection(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "auth"), []byte("Bearer "+testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(text string, e env) (*Config, []Warning, error) {
		return Load(writeConfig(t, text), LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: e.get, Home: home})
	}

	t.Run("defaults: off", func(t *testing.T) {
		cfg, _, err := load(minimal, env{})
		if err != nil {
			t.Fatal(err)
		}
		o := cfg.Management.OpAMP
		if cfg.Management.Enabled() || o.HeartbeatInterval != 30*time.Second || !o.AcceptRemoteConfig {
			t.Fatalf("defaults %+v", o)
		}
	})
	t.Run("headers from env and file", func(t *testing.T) {
		cfg, _, err := load(minimal+`management:
  opamp:
    endpoint: ws://127.0.0.1:4320/v1/opamp
    heartbeat-interval-ms: 500
    accept-remote-config: false
    headers:
      X-Fleet: ${FLEET}
    headers-file:
      Authorization: auth
`, env{"FLEET": "north"})
		if err != nil {
			t.Fatal(err)
		}
		o := cfg.Management.OpAMP
		if o.Headers["X-Fleet"] != "north" || o.Headers["Authorization"] != "Bearer "+testToken {
			t.Fatalf("headers %q", o.Headers)
		}
		if o.HeartbeatInterval != 500*time.Millisecond || o.AcceptRemoteConfig {
			t.Fatalf("settings %+v", o)
		}
		if r := cfg.Redacted().Management.OpAMP.Headers; r["Authorization"] != RedactedValue || r["X-Fleet"] != RedactedValue {
			t.Fatalf("redacted headers %q", r)
		}
		if o := cfg.Management.OpAMP; o.Headers["Authorization"] == RedactedValue {
			t.Fatal("Redacted changed the original")
		}
	})
	for _, tc := range []struct{ name, section, want string }{
		{"bad scheme", "    endpoint: tcp://h:1\n", "management.opamp.endpoint: scheme must be ws, wss, http or https"},
		{"not a url", "    endpoint: ':'\n", "management.opamp.endpoint: must be a URL"},
		{"wss without tls", "    endpoint: wss://h:1/v1/opamp\n", "management.opamp.tls.enabled: must be true"},
		{"zero heartbeat", "    endpoint: ws://h:1/v1/opamp\n    heartbeat-interval-ms: 0\n", "management.opamp.heartbeat-interval-ms: must be > 0"},
		{"missing header file", "    endpoint: ws://h:1/v1/opamp\n    headers-file:\n      Authorization: nope\n", "management.opamp.headers-file.Authorization: cannot read"},
		{"header value not a string", "    endpoint: ws://h:1/v1/opamp\n    headers:\n      Authorization: [x]\n", "management.opamp.headers"},
		{"unknown key", "    endpoint: ws://h:1/v1/opamp\n    hearbeat-interval-ms: 5\n", "did you mean management.opamp.heartbeat-interval-ms?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := load(minimal+"management:\n  opamp:\n"+tc.section, env{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "agent.yaml:") {
				t.Fatalf("no file:line:column in %v", err)
			}
		})
	}
	t.Run("a header secret is never quoted", func(t *testing.T) {
		_, _, err := load(minimal+"management:\n  opamp:\n    endpoint: ws://h:1/v1/opamp\n    headers:\n      Authorization: {a: "+testToken+"}\n", env{})
		if err == nil || strings.Contains(err.Error(), testToken) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestLoadRemoteKeepsLocalManagementAndQueuePath(t *testing.T) {
	opts := LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, ReadFile: os.ReadFile}
	local, _, err := Load(writeConfig(t, minimal+"queue:\n  path: local/wal.db\nmanagement:\n  opamp:\n    endpoint: ws://127.0.0.1:4320/v1/opamp\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	remote := minimal + "queue:\n  path: elsewhere.db\nmanagement:\n  opamp:\n    endpoint: ws://evil:1/v1/opamp\n"
	cfg, warns, err := LoadRemote(local, []byte(remote), opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Queue.Path != "local/wal.db" || cfg.Management.OpAMP.Endpoint != "ws://127.0.0.1:4320/v1/opamp" {
		t.Fatalf("queue.path %q endpoint %q: the local file must win", cfg.Queue.Path, cfg.Management.OpAMP.Endpoint)
	}
	if len(warns) != 2 || !strings.Contains(warns[0].String(), RemoteName) {
		t.Fatalf("warnings %v", warns)
	}
	_, _, err = LoadRemote(local, []byte(minimal+"retry:\n  max-attempts: -1\n"), opts)
	if err == nil || !strings.Contains(err.Error(), RemoteName+":") || !strings.Contains(err.Error(), "retry.max-attempts") {
		t.Fatalf("invalid remote: %v", err)
	}
}

func TestRedactYAML(t *testing.T) {
	in := "# top\noutput:\n  type: transport\n  token: " + testToken + " # the token\n  aes-secret-key-base64: " + testKey +
		"\nhttp:\n  token: " + testToken + "\nmanagement:\n  opamp:\n    headers:\n      Authorization: Bearer " + testToken + "\n    endpoint: ws://h:1\n"
	out, err := RedactYAML([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, testToken) || strings.Contains(s, testKey) {
		t.Fatalf("secret left in:\n%s", s)
	}
	if strings.Count(s, RedactedValue) != 4 || !strings.Contains(s, "endpoint: ws://h:1") || !strings.Contains(s, "# top") {
		t.Fatalf("redacted:\n%s", s)
	}
}

// A relay's tokens and key, in `input:` or in an `inputs:` list, are
// redacted too: input types name their own keys.
func TestRedactYAMLInputSecrets(t *testing.T) {
	in := "inputs:\n  - id: relay\n    type: edgesocket\n    tokens:\n      - name: edge-1\n        token: " + testToken +
		"\n    aes-secret-key-base64: " + testKey + "\ninput:\n  type: edgesocket\n  tokens: [{name: b, token: " + testToken + "x}]\n"
	out, err := RedactYAML([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, testToken) || strings.Contains(s, testKey) {
		t.Fatalf("secret left in:\n%s", s)
	}
	if strings.Count(s, RedactedValue) != 3 || !strings.Contains(s, "name: edge-1") {
		t.Fatalf("redacted:\n%s", s)
	}
}

func FuzzRedactYAML(f *testing.F) {
	f.Add([]byte("output:\n  token: " + testToken + "\n"))
	f.Add([]byte("management: {opamp: {headers: {A: " + testToken + "}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := RedactYAML(data)
		if err != nil {
			return
		}
		// Redacting twice changes nothing more: the report is stable.
		// (The YAML library does not round-trip every odd input, such as
		// a lone directive; those are not configs Load accepts.)
		again, err := RedactYAML(out)
		if err != nil {
			return
		}
		if strings.Count(string(again), RedactedValue) != strings.Count(string(out), RedactedValue) {
			t.Fatalf("not stable:\n%s\n%s", out, again)
		}
	})
}
