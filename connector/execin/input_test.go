//go:build unix

package execin

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

const testWait = 30 * time.Second

func open(t *testing.T, mod func(*Config)) *Input {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.RestartBackoff, cfg.MaxRestartBackoff, cfg.StopGrace = 10*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond
	mod(cfg)
	in, err := New(cfg, input.Settings{ID: "cmd"})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(t.Context(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

func pollN(t *testing.T, in *Input, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(testWait)
	for len(out) < n {
		evs, _ := in.Poll(t.Context(), nil, 100)
		for _, e := range evs {
			out = append(out, string(e.Payload))
		}
		if len(evs) == 0 {
			select {
			case <-in.Wakeup():
			case <-deadline:
				t.Fatalf("got %d of %d: %q", len(out), n, out)
			}
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	transporttest.Eventually(t, testWait, what, cond)
}

// A kept-running command that exits is started again; each run's stdout
// lines are events, its exit code and stderr are counted.
func TestRestartsAndReports(t *testing.T) {
	in := open(t, func(c *Config) { c.Command = []string{"/bin/sh", "-c", "echo out; echo oops >&2; exit 3"} })
	got := pollN(t, in, 3)
	for _, e := range got {
		if !strings.HasSuffix(e, `,"message":"out"}`) {
			t.Fatalf("event %s", e)
		}
	}
	waitFor(t, "three runs counted", func() bool { return in.Stats().Restarts >= 2 })
	s := in.Stats()
	if s.Errors < 2 || in.stats.lastExit.Load() != 3 || in.stats.stderrLines.Load() < 1 {
		t.Fatalf("stats %+v, last exit %d, stderr lines %d", s, in.stats.lastExit.Load(), in.stats.stderrLines.Load())
	}
}

// On a schedule the command runs every interval; past timeout-ms a run
// is stopped and counted as failed.
func TestScheduleAndTimeout(t *testing.T) {
	in := open(t, func(c *Config) { c.Command, c.Interval = []string{"/bin/echo", "tick"}, 20*time.Millisecond })
	pollN(t, in, 3)
	if in.Stats().Errors != 0 {
		t.Fatalf("a clean schedule counted errors: %+v", in.Stats())
	}
	slow := open(t, func(c *Config) {
		c.Command, c.Interval, c.Timeout = []string{"/bin/sleep", "100"}, time.Hour, 100*time.Millisecond
	})
	waitFor(t, "the timed-out run counted", func() bool { return slow.Stats().Errors == 1 })
}

// Close stops a command that ignores SIGTERM: SIGKILL after stop-grace.
func TestCloseKillsByPID(t *testing.T) {
	in := open(t, func(c *Config) {
		c.Command = []string{"/bin/sh", "-c", `trap "" TERM; echo $$; while :; do sleep 0.05; done`}
	})
	ev := pollN(t, in, 1)[0]
	pid, err := strconv.Atoi(ev[strings.Index(ev, `"message":"`)+11 : len(ev)-2])
	if err != nil {
		t.Fatalf("pid from %s: %v", ev, err)
	}
	_ = in.Close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pid %d still there after Close: %v", pid, err)
	}
}

// With nothing polled, a command flooding stdout is held at
// max-pending-bytes: the pipe fills and it blocks.
func TestBackpressure(t *testing.T) {
	in := open(t, func(c *Config) { c.Command, c.MaxPendingBytes, c.MaxLineBytes = []string{"yes", "flood"}, 64<<10, 1024 })
	waitFor(t, "the queue full", func() bool { return in.q.Full(100) })
	lines := in.Stats().LinesRead
	if b := in.q.Bytes(); b > 64<<10 {
		t.Fatalf("queue holds %d bytes", b)
	}
	got := pollN(t, in, 5000)
	if !strings.HasSuffix(got[0], `"message":"flood"}`) || lines > 100_000 {
		t.Fatalf("first %s, %d lines read while blocked", got[0], lines)
	}
}

func TestValidate(t *testing.T) {
	c := NewDefaultConfig()
	c.Command, c.Env, c.Timeout = []string{"/nonexistent/prog"}, []string{"NOEQ"}, time.Second
	err := c.Validate()
	for _, want := range []string{"command[0]:", "env[0]:", "timeout-ms:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("want %s in %v", want, err)
		}
	}
}
