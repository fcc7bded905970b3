//go:build unix

package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runDemo runs scripts/demo.sh (what `make demo` runs) against the binaries
// this suite built, on the given ports, in a temp install root.
func runDemo(t *testing.T, port, httpPort int) (string, string, error) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("the demo is a bash script and bash is not installed")
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, script)
	cmd.Env = append(os.Environ(),
		"DEMO_DIR="+dir,
		"DEMO_BIN="+filepath.Dir(bins.agent),
		"DEMO_PORT="+strconv.Itoa(port),
		"DEMO_HTTP_PORT="+strconv.Itoa(httpPort),
	)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

// runDemoOnFreePorts runs the demo on two ports that were free a moment
// before. The script takes its ports by number, so another socket may
// take one before the script binds it: such a run fails saying "address
// already in use", and is retried on other ports, bounded.
func runDemoOnFreePorts(t *testing.T) (stdout, stderr string, err error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		receiver, api := holdPort(t), holdPort(t)
		receiver.release()
		api.release()
		stdout, stderr, err = runDemo(t, receiver.port, api.port)
		if err == nil || attempt == demoAttempts || !strings.Contains(stderr, "address already in use") {
			return stdout, stderr, err
		}
		t.Logf("demo run %d: a port was taken, trying others: %s", attempt, stderr)
	}
}

// demoAttempts bounds runDemoOnFreePorts' retries.
const demoAttempts = 3

// A demo whose receiver cannot listen must stop there and say why in the
// receiver's own words, not start the agent and wait for records that
// cannot arrive.
func TestDemoFailsFastWhenTheReceiverPortIsTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo script")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	stdout, stderr, err := runDemo(t, port, deadPort(t))
	if err == nil {
		t.Fatalf("demo succeeded with its port taken:\n%s\n%s", stdout, stderr)
	}
	for _, want := range []string{"receiver could not start on 127.0.0.1:" + strconv.Itoa(port), "DEMO_PORT", "address already in use"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("demo stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stdout, "edge-agent status") {
		t.Errorf("demo went on to run the agent:\n%s", stdout)
	}
}

// The demo ends by saying where the received records are and how many
// arrived, so a newcomer knows what to open next.
func TestDemoSaysWhereTheRecordsAre(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo script")
	}
	stdout, stderr, err := runDemoOnFreePorts(t)
	if err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, stdout, stderr)
	}
	for _, want := range []string{"received.ndjson (1501 records", "demo: OK: 1501 of 1501 records delivered", "DEMO_DIR", "DEMO_PORT", "DEMO_HTTP_PORT"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout)
		}
	}
}
