package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

// TestPathDefaultsFile: an install root's edge-agent.paths (what the
// packages ship) moves the pid file for every command started from a
// shell, as the unit's environment does for the service; the environment
// still wins, and a broken file is a config error, not a silent fallback.
func TestPathDefaultsFile(t *testing.T) {
	e := newTestEnv(t)
	state := t.TempDir()
	pidFile := filepath.Join(state, "edge-agent.pid")
	e.write("edge-agent.paths", "EDGE_AGENT_PID_FILE="+pidFile+"\n")
	lock, err := process.AcquirePID(pidFile, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if code := e.run("status"); code != exitcode.OK || !strings.Contains(e.stdout.String(), pidFile) {
		t.Fatalf("status with the pid file named by edge-agent.paths: exit %d\n%s%s", code, e.stdout.String(), e.stderr.String())
	}
	e.vars["EDGE_AGENT_PID_FILE"] = filepath.Join(state, "other.pid")
	if code := e.run("status"); code != exitcode.NotRunning {
		t.Errorf("EDGE_AGENT_PID_FILE did not win over edge-agent.paths: exit %d", code)
	}
	e.write("edge-agent.paths", "EDGE_AGENT_PIDFILE="+pidFile+"\n")
	if code := e.run("status"); code != exitcode.Config || !strings.Contains(e.stderr.String(), "edge-agent.paths:1") {
		t.Errorf("a misspelt edge-agent.paths: exit %d, stderr %q", code, e.stderr.String())
	}
}
