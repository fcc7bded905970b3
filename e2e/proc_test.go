//go:build unix

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// proc is a process started by a test. Its output goes to files, so that a
// failing test can show it and a chatty process never blocks on a pipe.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdout string
	stderr string
	done   chan struct{}

	mu   sync.Mutex
	code int
}

// startProc starts bin and registers a cleanup that kills it by pid.
func startProc(t *testing.T, name, dir string, env []string, bin string, args ...string) *proc {
	t.Helper()
	outDir := t.TempDir()
	p := &proc{
		name:   name,
		stdout: filepath.Join(outDir, name+".stdout"),
		stderr: filepath.Join(outDir, name+".stderr"),
		done:   make(chan struct{}),
	}
	stdout, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = env
	p.cmd.Stdout = stdout
	p.cmd.Stderr = stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	stdout.Close()
	stderr.Close()
	go func() {
		err := p.cmd.Wait()
		p.mu.Lock()
		p.code = exitCode(err)
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s stdout:\n%s", name, tail(p.stdout, 40))
			t.Logf("%s stderr:\n%s", name, tail(p.stderr, 40))
		}
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited yet.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// wait returns the exit code, or fails the test if the process has not
// exited within d.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%s (pid %d) still running after %s", p.name, p.pid(), d)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

// signal sends sig to the process by pid.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.pid(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("signal %s: %v", p.name, err)
	}
}

// kill ends the process with SIGKILL and reaps it (bounded).
func (p *proc) kill() {
	if p.running() {
		_ = syscall.Kill(p.pid(), syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

func (p *proc) stderrText() string { return readText(p.stderr) }

// run runs bin to completion (bounded by a minute) and returns its output
// and exit code.
func run(t *testing.T, dir string, env []string, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout = &o
	cmd.Stderr = &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: timed out; stderr: %s", filepath.Base(bin), strings.Join(args, " "), e.String())
	}
	return o.String(), e.String(), exitCode(err)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

func readText(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func tail(path string, n int) string {
	lines := strings.Split(strings.TrimRight(readText(path), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// eventually polls cond every 50 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d = max(d, transporttest.MinWait) // a bound on a hung test, not a speed check
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
