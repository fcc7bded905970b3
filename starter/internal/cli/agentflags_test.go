package cli

import (
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

// agentCommands are the commands that find a running agent.
var agentCommands = [][]string{{"status"}, {"stop"}, {"reload"}, {"top"}, {"db", "wal-summary"}}

// TestAgentCommandsShareFlags: every command that finds a running agent
// takes --config (and -c) and describes it in the same words, so one
// command line names the same agent for each.
func TestAgentCommandsShareFlags(t *testing.T) {
	e := newTestEnv(t)
	var want string
	for _, cmd := range agentCommands {
		if code := e.run(append(cmd, "--help")...); code != exitcode.OK {
			t.Fatalf("%v --help: exit %d", cmd, code)
		}
		var line string
		for _, l := range strings.Split(e.stdout.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "--config") {
				line = strings.Join(strings.Fields(l), " ")
			}
		}
		switch {
		case line == "":
			t.Errorf("%v --help lists no --config:\n%s", cmd, e.stdout.String())
		case want == "":
			want = line
		case line != want:
			t.Errorf("%v --help says %q, %v says %q", cmd, line, agentCommands[0], want)
		}
		for _, flag := range []string{"--config", "-c"} {
			e.run(append(cmd, flag, "missing.yaml")...)
			if strings.Contains(e.stderr.String(), "flag provided but not defined") {
				t.Errorf("%v %s: %s", cmd, flag, e.stderr.String())
			}
		}
	}
}

// TestSignalCommandsCheckANamedConfig: stop and reload load a --config
// named on their command line before anything else, and refuse a file
// that does not load with exit 78 and its problems.
func TestSignalCommandsCheckANamedConfig(t *testing.T) {
	e := newTestEnv(t)
	bad := e.write("config/bad.yaml", "input:\n  type: nope\n")
	good := e.write("config/agent.yaml", goodConfig)
	for _, cmd := range []string{"stop", "reload"} {
		if code := e.run(cmd, "--config", bad); code != exitcode.Config || !strings.Contains(e.stderr.String(), "INVALID") {
			t.Errorf("%s --config <invalid>: exit %d, stderr %q; want %d and the problems", cmd, code, e.stderr.String(), exitcode.Config)
		}
		if code := e.run(cmd, "--config", "missing.yaml"); code != exitcode.Config {
			t.Errorf("%s --config <missing>: exit %d, want %d", cmd, code, exitcode.Config)
		}
		// A config that loads leaves the answer to whether the agent runs.
		code := e.run(cmd, "--config", good)
		if want := map[string]int{"stop": exitcode.OK, "reload": exitcode.NotRunning}[cmd]; code != want || !strings.Contains(e.stdout.String(), "not running") {
			t.Errorf("%s --config <valid>, no agent: exit %d (%q), want %d, not running", cmd, code, e.stdout.String(), want)
		}
	}
}
