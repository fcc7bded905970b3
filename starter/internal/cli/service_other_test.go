//go:build !windows

package cli

import (
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

// TestServiceWindowsOnly: every service subcommand, and service alone,
// says it is Windows-only and exits with the usage code instead of doing
// something else or nothing.
func TestServiceWindowsOnly(t *testing.T) {
	e := newTestEnv(t)
	for _, args := range [][]string{
		{"service"},
		{"service", "install"},
		{"service", "install", "--config", "agent.yaml"},
		{"service", "uninstall"},
		{"service", "start"},
		{"service", "stop"},
		{"service", "run"},
	} {
		if code := e.run(args...); code != exitcode.Usage {
			t.Errorf("%v: exit %d, want %d; stderr %s", args, code, exitcode.Usage, e.stderr.String())
		}
		if !strings.Contains(e.stderr.String(), "Windows-only") {
			t.Errorf("%v: stderr does not say Windows-only:\n%s", args, e.stderr.String())
		}
	}
	// The help still describes the command, so an operator on Linux can
	// read what it does on Windows.
	if code := e.run("service", "--help"); code != 0 || !strings.Contains(e.stdout.String(), "Windows service") {
		t.Errorf("service --help: exit %d\n%s", code, e.stdout.String())
	}
}
