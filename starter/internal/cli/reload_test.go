package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

func loadReloadConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(path, config.LoadOptions{
		Registry: input.NewRegistry(file.NewFactory()),
		Outputs:  output.NewRegistry(output.NewConsoleFactory(nil), output.NewTransportFactory()),
		Getenv:   func(string) string { return "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A reload names the sections that changed and, apart, each changed key
// the running agent cannot apply; log.level is not one of them.
func TestReloadChangesAndRestartKeys(t *testing.T) {
	cur := loadReloadConfig(t, `input:
  type: file
  paths: ["in/*.log"]
queue:
  path: data/wal.db
log:
  level: info
`)
	next := loadReloadConfig(t, `input:
  type: file
  paths: ["in/*.log", "more/*.log"]
queue:
  path: data/other.db
  fsync: false
agent:
  delivery-guarantee: NON
log:
  level: debug
  file: log/other.log
`)
	if got, want := changedSections(cur, next), []string{"agent", "queue", "input", "log"}; !slices.Equal(got, want) {
		t.Errorf("changed sections = %q, want %q", got, want)
	}
	if got, want := restartKeys(cur, next), []string{"queue.path", "queue.fsync", "agent.delivery-guarantee", "log.file"}; !slices.Equal(got, want) {
		t.Errorf("restart keys = %q, want %q", got, want)
	}
	if got := changedSections(cur, cur); len(got) != 0 {
		t.Errorf("an unchanged config reports %q changed", got)
	}
}
