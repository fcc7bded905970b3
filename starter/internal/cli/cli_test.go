package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

// testEnv runs commands in-process against a temp install root.
type testEnv struct {
	t      *testing.T
	home   string
	vars   map[string]string
	stdout bytes.Buffer
	stderr bytes.Buffer
	stdin  string // what the next run reads
}

func newTestEnv(t *testing.T) *testEnv {
	home := t.TempDir()
	return &testEnv{t: t, home: home, vars: map[string]string{"EDGE_AGENT_HOME": home}}
}

func (e *testEnv) run(args ...string) int {
	e.stdout.Reset()
	e.stderr.Reset()
	return Run(context.Background(), Env{
		Args:   append([]string{"edge-agent"}, args...),
		Stdin:  strings.NewReader(e.stdin),
		Stdout: &e.stdout,
		Stderr: &e.stderr,
		Getenv: func(k string) string { return e.vars[k] },
		Environ: func() []string {
			var out []string
			for k, v := range e.vars {
				out = append(out, k+"="+v)
			}
			return out
		},
		Executable: func() (string, error) { return filepath.Join(e.home, "bin", "edge-agent"), nil },
		Build:      BuildInfo{Version: "v1.2.3", Commit: "abc123", Date: "2026-01-02"},
		Exit:       func(code int) { e.t.Fatalf("unexpected forced exit %d", code) },
	})
}

func (e *testEnv) write(rel, content string) string {
	e.t.Helper()
	p := filepath.Join(e.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func TestVersion(t *testing.T) {
	e := newTestEnv(t)
	if code := e.run("version"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"edge-agent v1.2.3", "commit: abc123", "built: 2026-01-02", "go: go1."} {
		if !strings.Contains(e.stdout.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, e.stdout.String())
		}
	}
}

func TestHelpEveryCommand(t *testing.T) {
	e := newTestEnv(t)
	for _, args := range [][]string{
		{"--help"}, {"start", "--help"}, {"stop", "--help"}, {"status", "--help"},
		{"version", "--help"}, {"config", "check", "--help"}, {"check", "output", "--help"}, {"db", "--help"},
	} {
		if code := e.run(args...); code != 0 {
			t.Errorf("%v: exit %d, stderr %s", args, code, e.stderr.String())
		}
		if !strings.Contains(e.stdout.String(), "edge-agent") {
			t.Errorf("%v: no help text:\n%s", args, e.stdout.String())
		}
		// db's help text belongs to package dbcli and carries its own examples.
		if len(args) > 1 && args[0] != "db" && !strings.Contains(e.stdout.String(), "Examples:") {
			t.Errorf("%v: help has no examples:\n%s", args, e.stdout.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	e := newTestEnv(t)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitcode.Failure, ""},
		{[]string{"bogus"}, exitcode.Usage, `unknown command "bogus" (see 'edge-agent --help')`},
		{[]string{"strat"}, exitcode.Usage, `unknown command "strat"; did you mean start? (see 'edge-agent --help')`},
		{[]string{"--bogus"}, exitcode.Usage, "(see 'edge-agent --help')"},
		{[]string{"start", "--bogus"}, exitcode.Usage, "(see 'edge-agent start --help')"},
		{[]string{"config", "chek"}, exitcode.Usage, `unknown command "chek"; did you mean check? (see 'edge-agent config --help')`},
		{[]string{"config", "--bogus"}, exitcode.Usage, "(see 'edge-agent config --help')"},
		{[]string{"config", "check", "--bogus"}, exitcode.Usage, "(see 'edge-agent config check --help')"},
		{[]string{"config", "check", "--config", "a", "b"}, exitcode.Usage, `takes one config path (--config FILE or FILE), got ["a" "b"]`},
		{[]string{"db", "wal-sumary"}, exitcode.Usage, `unknown command "wal-sumary"; did you mean wal-summary? (see 'edge-agent db --help')`},
		{[]string{"db", "frobnicate"}, exitcode.Usage, `unknown command "frobnicate" (see 'edge-agent db --help')`},
		{[]string{"db", "--bogus"}, exitcode.Usage, "(see 'edge-agent db --help')"},
		{[]string{"db", "wal-summary", "--bogus"}, exitcode.Usage, "(see 'edge-agent db wal-summary --help')"},
		{[]string{"help", "strat"}, exitcode.Usage, "strat"},
		{[]string{"config", "help", "chek"}, exitcode.Usage, "chek"},
		{[]string{"start", "a.yaml", "b.yaml"}, exitcode.Usage, "one config path"},
		{[]string{"start", "--config", "a.yaml", "b.yaml"}, exitcode.Usage, "one config path"},
		{[]string{"start", "--log-level", "loud"}, exitcode.Usage, "--log-level"},
		{[]string{"config", "check", "a", "b"}, exitcode.Usage, "edge-agent config check takes one config path"},
		{[]string{"stop", "--timeout", "soon"}, exitcode.Usage, "timeout"},
	}
	for _, tt := range tests {
		code := e.run(tt.args...)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tt.args, code, tt.code, e.stderr.String())
		}
		if tt.msg != "" && !strings.Contains(e.stderr.String(), tt.msg) {
			t.Errorf("%v: stderr %q lacks %q", tt.args, e.stderr.String(), tt.msg)
		}
		// A usage error is one line naming the program once (in the prefix
		// and once in the hint); the help text it points at is not dumped
		// after it.
		if tt.code == exitcode.Usage {
			if n := strings.Count(e.stderr.String(), "edge-agent"); n > 2 || strings.Contains(e.stderr.String(), "edge-agent edge-agent") {
				t.Errorf("%v: stderr repeats the program name: %q", tt.args, e.stderr.String())
			}
			if strings.Count(e.stderr.String(), "\n") != 1 || e.stdout.Len() != 0 {
				t.Errorf("%v: want one line on stderr and nothing on stdout, got %q and %q", tt.args, e.stderr.String(), e.stdout.String())
			}
		}
	}
}

func TestStatusAndStopNotRunning(t *testing.T) {
	e := newTestEnv(t)
	if code := e.run("status"); code != exitcode.NotRunning {
		t.Fatalf("status without pid file: exit %d", code)
	}
	e.write("edge-agent.pid", "not-a-pid\n")
	if code := e.run("status"); code != exitcode.NotRunning {
		t.Fatalf("status with garbage: exit %d", code)
	}
	if code := e.run("stop"); code != 0 || !strings.Contains(e.stdout.String(), "not running") {
		t.Fatalf("stop when not running: exit %d, %q", code, e.stdout.String())
	}
	// A live pid in a file nobody holds (a kill -9 whose pid was reused)
	// is not running, and stop must not signal that stranger (this test).
	e.write("edge-agent.pid", strconv.Itoa(os.Getpid()))
	if code := e.run("status"); code != exitcode.NotRunning {
		t.Fatalf("status with a live pid but no lock: exit %d", code)
	}
	if code := e.run("stop"); code != 0 || !strings.Contains(e.stdout.String(), "not running") {
		t.Fatalf("stop with a live pid but no lock: exit %d, %q", code, e.stdout.String())
	}
	// The lock stands for a running agent (held here by this test, which
	// status must not signal).
	lock, err := process.AcquirePID(filepath.Join(e.home, "edge-agent.pid"), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if code := e.run("status"); code != 0 {
		t.Fatalf("status with a live pid: exit %d", code)
	}
	if !strings.Contains(e.stdout.String(), strconv.Itoa(os.Getpid())) {
		t.Errorf("status does not print the pid: %q", e.stdout.String())
	}
	// EDGE_AGENT_PID_FILE moves the pid file (relative to the root).
	e.vars["EDGE_AGENT_PID_FILE"] = "run/agent.pid"
	if code := e.run("status"); code != exitcode.NotRunning {
		t.Fatalf("status with EDGE_AGENT_PID_FILE unset file: exit %d", code)
	}
}

const goodConfig = `input:
  type: file
  paths: ["in/*.log"]
output:
  type: transport
  endpoint: 127.0.0.1:9999
  token: s3cret-token
`

func TestConfigCheck(t *testing.T) {
	e := newTestEnv(t)
	good := e.write("config/agent.yaml", goodConfig)
	if code := e.run("config", "check", good); code != 0 {
		t.Fatalf("good config: exit %d, stderr %s", code, e.stderr.String())
	}
	if !strings.Contains(e.stdout.String(), "OK") {
		t.Errorf("no OK: %q", e.stdout.String())
	}
	// --config names the file as start's flag does.
	if code := e.run("config", "check", "--config", good); code != 0 || !strings.Contains(e.stdout.String(), good+": OK") {
		t.Fatalf("--config: exit %d, stdout %q, stderr %s", code, e.stdout.String(), e.stderr.String())
	}
	if code := e.run("config", "check", "--config", good, good); code != exitcode.Usage {
		t.Fatalf("--config and a positional file: exit %d, want %d", code, exitcode.Usage)
	}
	// Without an argument: the config start would use.
	if code := e.run("config", "check"); code != 0 {
		t.Fatalf("default config: exit %d, stderr %s", code, e.stderr.String())
	}

	bad := e.write("bad.yaml", "agent:\n  bulk-max-size: -1\n  idle-sleep-mss: 5\n"+goodConfig)
	if code := e.run("config", "check", bad); code != exitcode.Config {
		t.Fatalf("bad config: exit %d", code)
	}
	out := e.stderr.String()
	for _, want := range []string{"bad.yaml:2:", "agent.bulk-max-size", "bad.yaml:3:", "idle-sleep-mss", "INVALID (2 problem(s))"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+e.stdout.String(), "s3cret-token") {
		t.Error("config check printed the token")
	}
	if code := e.run("config", "check", filepath.Join(e.home, "missing.yaml")); code != exitcode.Config {
		t.Fatalf("missing file: exit %d", code)
	}
}

func TestStartConfigErrorsExitConfig(t *testing.T) {
	e := newTestEnv(t)
	if code := e.run("start"); code != exitcode.Config {
		t.Fatalf("start without any config: exit %d, stderr %s", code, e.stderr.String())
	}
	if !strings.Contains(e.stderr.String(), "BOOTSTRAP_FAILED") || !strings.Contains(e.stderr.String(), "EDGE_AGENT_CONFIG") {
		t.Errorf("stderr: %q", e.stderr.String())
	}
	bad := e.write("config/agent.yaml", "nope: 1\n"+goodConfig)
	if code := e.run("start", bad); code != exitcode.Config {
		t.Fatalf("start with a bad config: exit %d", code)
	}
	if !strings.Contains(e.stderr.String(), "agent.yaml:1:1") {
		t.Errorf("no line:column in %q", e.stderr.String())
	}
	// stderr is not a terminal here: the agent's stderr is a stream of JSON
	// records, the failure one of them, said once.
	if failed := countFailures(t, e.stderr.String(), "BOOTSTRAP_FAILED", exitcode.Config); failed != 1 {
		t.Errorf("%d BOOTSTRAP_FAILED records with exit_code 78 on stderr, want 1: %q", failed, e.stderr.String())
	}
	// The failure also reaches the default log file.
	b, _ := os.ReadFile(filepath.Join(e.home, "log", "edge-agent.log"))
	if !strings.Contains(string(b), "BOOTSTRAP_FAILED") {
		t.Errorf("log file lacks BOOTSTRAP_FAILED: %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.home, "edge-agent.pid")); !os.IsNotExist(err) {
		t.Error("a refused start left a pid file")
	}
}

// A failure after the log is open (here the pid file is held) reaches a
// non-terminal stderr as one JSON record, not a record plus a plain line.
func TestStartFailureAfterLogOpenIsOneJSONRecord(t *testing.T) {
	e := newTestEnv(t)
	e.write("config/agent.yaml", goodConfig)
	held, err := process.AcquirePID(filepath.Join(e.home, "edge-agent.pid"), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if code := e.run("start"); code != exitcode.InUse {
		t.Fatalf("start on a held pid file: exit %d, want %d; stderr %s", code, exitcode.InUse, e.stderr.String())
	}
	if failed := countFailures(t, e.stderr.String(), "another edge-agent is using", exitcode.InUse); failed != 1 {
		t.Errorf("%d records naming the other agent on stderr, want 1: %q", failed, e.stderr.String())
	}
}

// countFailures decodes stderr as JSON lines, failing the test on any line
// that is not one, and counts the records whose message contains msg and
// whose exit_code is code.
func countFailures(t *testing.T, stderr, msg string, code int) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec struct {
			Msg      string `json:"msg"`
			ExitCode int    `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line is not JSON: %q: %v", line, err)
		}
		if strings.Contains(rec.Msg, msg) && rec.ExitCode == code {
			n++
		}
	}
	return n
}

func TestReadyTimeout(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if d, err := readyTimeout(get); err != nil || d != defaultReadyTimeout {
		t.Fatalf("default: %v %v", d, err)
	}
	env["EDGE_AGENT_STARTUP_READY_TIMEOUT_S"] = "3"
	if d, err := readyTimeout(get); err != nil || d != 3*time.Second {
		t.Fatalf("3: %v %v", d, err)
	}
	for _, bad := range []string{"0", "-1", "ten"} {
		env["EDGE_AGENT_STARTUP_READY_TIMEOUT_S"] = bad
		if _, err := readyTimeout(get); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestReadyPipeProtocol(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := &readyPipe{f: w}
	p.failed(6, errors.New("another edge-agent is using /x\nsecond line"))
	p.ready() // ignored: one answer only
	b := make([]byte, 256)
	n, _ := r.Read(b)
	line := strings.TrimSpace(string(b[:n]))
	code, msg, ok := parseFailure(line)
	if !ok || code != 6 || msg != "another edge-agent is using /x; second line" {
		t.Fatalf("parseFailure(%q) = %d %q %v", line, code, msg, ok)
	}
	var nilPipe *readyPipe
	nilPipe.ready() // must not panic
	if _, _, ok := parseFailure("ready 12"); ok {
		t.Error("ready line parsed as failure")
	}
}
