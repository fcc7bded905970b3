package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const withProcessors = `agent:
  processors:
    - set: {site: plant-7}
inputs:
  - id: app
    paths: [/var/log/app/*.log]
    processors:
      - parse: {format: json}
      - drop: 'payload.level == "debug"'
      - keep: [payload, _ts]
      - redact: {detectors: [email, credit-card], action: mask}
      - dedup: {window-ms: 10000}
  - id: db
    paths: [/var/log/db/*.log]
output:
  type: console
`

func TestLoadProcessors(t *testing.T) {
	cfg, _, err := loadText(t, withProcessors)
	if err != nil {
		t.Fatal(err)
	}
	app := cfg.Inputs[0].Processors
	if len(app) != 5 || app[0].Parse.Format != "json" || app[1].Drop != `payload.level == "debug"` ||
		!slices.Equal(app[2].KeepFields, []string{"payload", "_ts"}) || app[2].Keep != "" ||
		app[4].Dedup.Window != 10*time.Second {
		t.Fatalf("app processors %+v", app)
	}
	specs := cfg.AgentOptions().InputList
	// Each input's own steps, then the agent's.
	if len(specs[0].Processors) != 6 || specs[0].Processors[5].Set["site"] != "plant-7" {
		t.Fatalf("app's chain %+v", specs[0].Processors)
	}
	if len(specs[1].Processors) != 1 || specs[1].Processors[0].Set["site"] != "plant-7" {
		t.Fatalf("db's chain %+v", specs[1].Processors)
	}
}

func TestLoadProcessorsSingleInput(t *testing.T) {
	cfg, _, err := loadText(t, "input:\n  paths: [/a]\n  processors:\n    - keep: 'payload != \"\"'\noutput:\n  type: console\n")
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.AgentOptions().InputList[0].Processors; len(p) != 1 || p[0].Keep != `payload != ""` {
		t.Fatalf("input processors %+v", p)
	}
}

// TestLoadProcessorsRejects: every problem names the file, line:column
// and key; an expression's own column is in the message.
func TestLoadProcessorsRejects(t *testing.T) {
	tests := []struct{ name, procs, want string }{
		{"syntax", "      - drop: 'payload.level =='\n", "agent.yaml:5:9: inputs[0].processors[0].drop: expression column 16: unexpected token EOF"},
		{"type", "      - keep: '1 + \"a\" == 2'\n", `agent.yaml:5:9: inputs[0].processors[0].keep: expression column 3: invalid operation: + (mismatched types int and string)`},
		{"format", "      - parse: {format: xml}\n", `agent.yaml:5:17: inputs[0].processors[0].parse.format: "xml": use one of json`},
		{"unknown key", "      - dedup: {windw-ms: 5}\n", "agent.yaml:5:17: inputs[0].processors[0].dedup.windw-ms: unknown key; did you mean inputs[0].processors[0].dedup.window-ms?"},
		{"unknown processor", "      - grep: x\n", "agent.yaml:5:9: inputs[0].processors[0].grep: unknown key"},
		{"keep list entry", "      - keep: [a..b]\n", "agent.yaml:5:16: inputs[0].processors[0].keep[0]: field \"a..b\" has an empty part"},
		{"not a list", "      parse: {format: json}\n", "agent.yaml:4:5: inputs[0].processors: expected a list of processors, got a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := "inputs:\n  - id: app\n    paths: [/a]\n    processors:\n" + tc.procs + "output:\n  type: console\n"
			_, _, err := loadText(t, text)
			if err == nil {
				t.Fatal("loaded, want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

func TestChangesProcessors(t *testing.T) {
	base, _, err := loadText(t, withProcessors)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unchanged", withProcessors, nil},
		{"an input's list", strings.Replace(withProcessors, "window-ms: 10000", "window-ms: 5000", 1), []string{"app"}},
		{"the agent's list", strings.Replace(withProcessors, "plant-7", "plant-8", 1), []string{"app", "db"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, _, err := loadText(t, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			if ch := base.Changes(next); !slices.Equal(ch.Inputs, tc.want) {
				t.Fatalf("changes %+v, want inputs %v", ch, tc.want)
			}
		})
	}
}

// A relative hash-key-file is read under the install root, as every path.
func TestProcessorsHashKeyUnderTheRoot(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "redact.key"), []byte("0123456789abcdef0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := "input:\n  paths: [/a]\n  processors:\n    - redact: {detectors: [email], action: hash, hash-key-file: config/redact.key}\noutput:\n  type: console\n"
	cfg, _, err := Load(writeConfig(t, text), LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Inputs[0].Processors[0].Redact.HashKeyFile; got != filepath.Join(home, "config", "redact.key") {
		t.Errorf("hash-key-file = %s", got)
	}
}
