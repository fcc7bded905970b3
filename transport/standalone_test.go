package transport

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStandalone proves the module builds on its own (no go.work) and
// depends on nothing else from edge-agent: other tools import only it.
func TestStandalone(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the standalone build in -short mode")
	}
	// go test puts its own toolchain first on PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipping: no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOWORK=off go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, dep := range strings.Fields(run("list", "-deps", "./...")) {
		for _, banned := range []string{"edge-agent/starter", "edge-agent/connector"} {
			if strings.Contains(dep, banned) {
				t.Errorf("transport depends on %s", dep)
			}
		}
	}
	run("build", "./...")
}
