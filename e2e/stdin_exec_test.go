//go:build unix

package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lineMessages counts the "message" of every event with a _ts and no
// topic (stdin and exec events) the receiver wrote.
func lineMessages(t *testing.T, rc *receiver) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, g := range receivedGroups(t, rc.out) {
		for _, o := range g {
			if m, ok := o["message"].(string); ok && o["_ts"] != nil && o["topic"] == nil {
				out[m]++
			}
		}
	}
	return out
}

// The built agent reads a pipe on its stdin (type: stdin) and runs a
// command (type: exec) that prints lines, writes to stderr and exits 4:
// every line of both arrives, the exit code and the stderr line are in the
// log, and a SIGTERM stop keeps the agent's exit code 0.
func TestStdinAndExec(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port})
	root.opts.inputs = `inputs:
  - id: in
    type: stdin
  - id: cmd
    type: exec
    command: ["/bin/sh", "-c", "i=0; while [ $i -lt 300 ]; do echo exec-$i; i=$((i+1)); done; echo exec-stderr-note >&2; exit 4"]
    restart-backoff-ms: 3600000
    max-restart-backoff-ms: 3600000
`
	root.writeConfig()

	var stdin io.WriteCloser
	stopAgent := startWithStdin(t, root, func(cmd *exec.Cmd) (err error) {
		stdin, err = cmd.StdinPipe()
		return err
	}, "start")
	var want []string
	for i := range 500 {
		want = append(want, fmt.Sprintf("stdin-%d", i))
	}
	for i := range 300 {
		want = append(want, fmt.Sprintf("exec-%d", i))
	}
	if _, err := fmt.Fprintln(stdin, strings.Join(want[:500], "\n")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	var got map[string]int
	eventually(t, deliverTimeout, "every stdin and exec line delivered", func() bool {
		got = lineMessages(t, rc)
		for _, w := range want {
			if got[w] == 0 {
				return false
			}
		}
		return true
	})
	eventually(t, 20*time.Second, "the exit code and stderr logged", func() bool {
		log := root.logText()
		return strings.Contains(log, `"exit_code":4`) && strings.Contains(log, "exec-stderr-note") &&
			strings.Contains(log, "stdin reached its end")
	})
	stopAgent()
	for _, w := range want {
		if got[w] != 1 {
			t.Fatalf("%s delivered %d times", w, got[w])
		}
	}
}

// `edge-agent start --stdin` adds an input reading the pipe: to a
// config's inputs list (here one exec input), or as the only input of a
// config without an input section. Every line arrives, once.
func TestStartStdinFlag(t *testing.T) {
	skipShort(t)
	for _, tc := range []struct {
		name, inputs string
		want         []string
	}{
		{"inputs list", `inputs:
  - id: cmd
    type: exec
    command: ["/bin/sh", "-c", "echo exec-line"]
    restart-backoff-ms: 3600000
    max-restart-backoff-ms: 3600000
`, []string{"piped-1", "piped-2", "piped-3", "exec-line"}},
		{"no input section", "\n", []string{"piped-1", "piped-2", "piped-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testStartStdinFlag(t, tc.inputs, tc.want) })
	}
}

func testStartStdinFlag(t *testing.T, inputs string, want []string) {
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port})
	root.opts.inputs = inputs
	root.writeConfig()
	stopAgent := startWithStdin(t, root, func(cmd *exec.Cmd) error {
		cmd.Stdin = strings.NewReader("piped-1\npiped-2\npiped-3\n")
		return nil
	}, "start", "--stdin")
	var got map[string]int
	eventually(t, deliverTimeout, fmt.Sprintf("%v delivered", want), func() bool {
		got = lineMessages(t, rc)
		for _, w := range want {
			if got[w] == 0 {
				return false
			}
		}
		return true
	})
	stopAgent()
	for _, w := range want {
		if got[w] != 1 {
			t.Fatalf("%s delivered %d times", w, got[w])
		}
	}
}

// startWithStdin starts the agent in root with args (its output in a file
// of the test), after setup has wired its stdin, and kills it by PID at
// the test's end. The function it returns stops it with SIGTERM and
// fails the test unless it exits 0.
func startWithStdin(t *testing.T, root *agentRoot, setup func(*exec.Cmd) error, args ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bins.agent, args...)
	cmd.Dir, cmd.Env = root.dir, root.env()
	if err := setup(cmd); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close() })
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // by PID; a no-op once it exited
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
	})
	return func() {
		t.Helper()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("agent exit after SIGTERM: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("agent did not stop within a minute of SIGTERM")
		}
	}
}
