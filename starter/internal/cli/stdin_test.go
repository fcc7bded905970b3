package cli

import (
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

// start --stdin reaches the config load: a config with a single input
// section is refused (78) with the way out; with --background it is a
// usage error (64), the detached agent having no such stdin.
func TestStartStdinFlag(t *testing.T) {
	e := newTestEnv(t)
	cfg := e.write("config/agent.yaml", "input:\n  paths: [/var/log/app.log]\noutput:\n  type: console\n")
	if code := e.run("start", "--stdin", "--background", "--config", cfg); code != exitcode.Usage || !strings.Contains(e.stderr.String(), "--stdin") {
		t.Fatalf("--stdin --background: exit %d, stderr %s", code, e.stderr.String())
	}
	if code := e.run("start", "--stdin", "--config", cfg); code != exitcode.Config || !strings.Contains(e.stderr.String(), "needs an inputs list") {
		t.Fatalf("--stdin with an input section: exit %d, stderr %s", code, e.stderr.String())
	}
}
