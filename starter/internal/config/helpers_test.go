package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

func testRegistry() *input.Registry { return input.NewRegistry(file.NewFactory()) }

func testOutputs() *output.Registry {
	return output.NewRegistry(output.NewConsoleFactory(nil), output.NewTransportFactory())
}

// transportOf returns the transport output's config of cfg.
func transportOf(t *testing.T, cfg *Config) *output.TransportConfig {
	t.Helper()
	tc, ok := cfg.Output.Options.(*output.TransportConfig)
	if !ok {
		t.Fatalf("output options are %T, want *output.TransportConfig", cfg.Output.Options)
	}
	return tc
}

// env is a fake environment for Getenv.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// writeConfig writes agent.yaml into a temp dir and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadText loads text with an empty environment.
func loadText(t *testing.T, text string) (*Config, []Warning, error) {
	t.Helper()
	return Load(writeConfig(t, text), LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get})
}
