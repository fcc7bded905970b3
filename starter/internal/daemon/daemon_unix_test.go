//go:build !windows

package daemon

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

const testConfig = `input:
  type: file
  paths: ["in/*.log"]
output:
  type: console
http:
  listen: "off"
`

// logWatch is a stderr that tells waiters about every write.
type logWatch struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{wrote: make(chan struct{}, 1)} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.buf.Write(p)
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits until the log holds s, failing the test after 10 s.
func (w *logWatch) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.wrote:
		case <-deadline.C:
			t.Fatalf("no %q in the log: %s", s, w.String())
		}
	}
}

type testRun struct {
	home   string
	stderr *logWatch
	ready  chan struct{}
	done   chan error
	cancel context.CancelFunc
}

// startRun runs the daemon on its own goroutine in a fresh install root
// holding config.
func startRun(t *testing.T, config string) *testRun {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "agent.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &testRun{home: home, stderr: newLogWatch(), ready: make(chan struct{}), done: make(chan error, 1), cancel: cancel}
	env := map[string]string{"EDGE_AGENT_HOME": home, "GOGC": "100", "GOMEMLIMIT": "off"}
	var readyOnce sync.Once
	go func() {
		r.done <- Run(ctx, Options{
			Home:       home,
			Getenv:     func(k string) string { return env[k] },
			Stdout:     &bytes.Buffer{},
			Stderr:     r.stderr,
			Exit:       func(code int) { t.Errorf("forced exit %d", code) },
			PrintError: func(msg string) { t.Errorf("detached error line from a foreground run: %s", msg) },
			OnReady:    func() { readyOnce.Do(func() { close(r.ready) }) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	return r
}

func (r *testRun) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-r.ready:
	case err := <-r.done:
		t.Fatalf("Run ended before it was ready: %v; log %s", err, r.stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("not ready within 10 s; log %s", r.stderr.String())
	}
}

// A run that was ready stops cleanly when its context ends: nil, and the
// pid file is gone.
func TestRunStopsCleanly(t *testing.T) {
	r := startRun(t, testConfig)
	r.waitReady(t)
	if _, err := os.Stat(filepath.Join(r.home, "edge-agent.pid")); err != nil {
		t.Fatalf("no pid file while running: %v", err)
	}
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if _, err := os.Stat(filepath.Join(r.home, "edge-agent.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file left behind: %v", err)
	}
}

// A config that does not load fails the start with exitcode.Config, as a
// *Failure already reported on stderr.
func TestRunBadConfigFails(t *testing.T) {
	r := startRun(t, "nope: 1\n"+testConfig)
	var err error
	select {
	case err = <-r.done:
		r.done <- err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	var f *Failure
	if !errors.As(err, &f) || f.Code != exitcode.Config {
		t.Fatalf("Run = %v, want a *Failure with code %d", err, exitcode.Config)
	}
	if !strings.Contains(r.stderr.String(), msgFailed) {
		t.Errorf("stderr lacks %q: %s", msgFailed, r.stderr.String())
	}
}

// SIGHUP reloads the file: a valid change is applied and logged with the
// sections it changed; an invalid file is rejected and the run goes on.
func TestHangupReloads(t *testing.T) {
	r := startRun(t, testConfig)
	r.waitReady(t)
	cfgPath := filepath.Join(r.home, "config", "agent.yaml")
	if err := os.WriteFile(cfgPath, []byte(testConfig+"agent:\n  bulk-max-size: 64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.stderr.waitFor(t, `"msg":"config reloaded"`)
	if err := os.WriteFile(cfgPath, []byte("nope: 1\n"+testConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.stderr.waitFor(t, "config reload rejected; the running config is kept")
	select {
	case err := <-r.done:
		t.Fatalf("a rejected reload ended the run: %v", err)
	default:
	}
}
