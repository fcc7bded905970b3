//go:build unix

package e2e

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// status follows LSB: 3 when stopped (no pid file, garbage, dead pid), 0
// while running, 3 again after a graceful stop.
func TestStatusExitCodes(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{port: deadPort(t)})
	if out, _, code := root.cli("status"); code != 3 || !strings.Contains(out, "not running") {
		t.Fatalf("status without pid file: exit %d, %q; want 3", code, out)
	}
	if err := os.WriteFile(root.path("edge-agent.pid"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, code := root.cli("status"); code != 3 {
		t.Fatalf("status with a garbage pid file: exit %d; want 3", code)
	}
	os.Remove(root.path("edge-agent.pid"))

	agent := root.startReady()
	out, _, code := root.cli("status")
	if code != 0 || !strings.Contains(out, "running") {
		t.Fatalf("status while running: exit %d, %q; want 0", code, out)
	}
	if strings.Contains(out, "e2e-token-0123456789") {
		t.Error("status prints the token")
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	if _, _, code := root.cli("status"); code != 3 {
		t.Fatalf("status after stop: exit %d; want 3", code)
	}
}

// start --background returns once the agent is ready; stop ends it; both
// are idempotent. The binary sits in <root>/bin so the install root is
// found from its own path, with no EDGE_AGENT_HOME.
func TestBackgroundStartStop(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port})
	bin := root.path("bin/edge-agent")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, bins.agent, bin)
	env := []string{"PATH=" + os.Getenv("PATH"), "EDGE_AGENT_STARTUP_READY_TIMEOUT_S=20"}
	elsewhere := t.TempDir() // relative paths must not follow the cwd

	begin := time.Now()
	out, errOut, code := run(t, elsewhere, env, bin, "start", "--background")
	if code != 0 {
		t.Fatalf("start --background: exit %d\nstdout: %s\nstderr: %s\nedge-agent.out: %s", code, out, errOut, readText(root.path("edge-agent.out")))
	}
	t.Logf("start --background returned after %s: %s", time.Since(begin).Round(time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(root.logText(), "BOOTSTRAP_READY") {
		t.Fatal("start --background returned before the readiness line")
	}
	pid := root.pid()
	if pid <= 0 {
		t.Fatal("no pid file under the install root")
	}
	if _, err := os.Stat(root.path("data/wal.db")); err != nil {
		t.Errorf("WAL not under the install root: %v", err)
	}
	if _, _, code := run(t, elsewhere, env, bin, "status"); code != 0 {
		t.Fatalf("status: exit %d, want 0", code)
	}
	out, _, code = run(t, elsewhere, env, bin, "start", "--background")
	if code != 0 || !strings.Contains(out, "already running") {
		t.Fatalf("second start --background: exit %d, %q; want 0 and 'already running'", code, out)
	}

	want := makeLines(t.Name(), 0, 200)
	root.createFile("in/app.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)

	out, errOut, code = run(t, elsewhere, env, bin, "stop")
	if code != 0 {
		t.Fatalf("stop: exit %d: %s %s", code, out, errOut)
	}
	if _, _, code := run(t, elsewhere, env, bin, "status"); code != 3 {
		t.Fatalf("status after stop: exit %d, want 3", code)
	}
	if _, err := os.Stat(root.path("edge-agent.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file left after stop: %v", err)
	}
	// Detached, the agent logs to the file only: edge-agent.out is kept
	// for what only the Go runtime writes (a panic).
	if out := readText(root.path("edge-agent.out")); strings.Contains(out, "BOOTSTRAP_READY") {
		t.Errorf("the detached agent logged to edge-agent.out: %s", out)
	}
	if !strings.Contains(root.logText(), "Shutdown signal received") {
		t.Error("graceful stop not logged")
	}
	if _, _, code := run(t, elsewhere, env, bin, "stop"); code != 0 {
		t.Fatalf("stop when not running: exit %d, want 0", code)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A second agent on the same data dir refuses with exit 6: through another
// install root whose queue.path points at the same WAL (the WAL lock), and
// in the same install root (the pid file).
func TestSecondAgentSameDataDir(t *testing.T) {
	skipShort(t)
	port := deadPort(t)
	first := newRoot(t, options{port: port})
	agent := first.startReady()

	second := newRoot(t, options{port: port, queuePath: first.path("data/wal.db")})
	p := second.start()
	if code := p.wait(t, 30*time.Second); code != 6 {
		t.Fatalf("second agent on the same WAL: exit %d, want 6; stderr: %s", code, p.stderrText())
	}
	if msg := p.stderrText() + second.logText(); !strings.Contains(msg, "another edge-agent is using") {
		t.Fatalf("no 'another edge-agent is using' message: %s", msg)
	}

	same := first.start()
	if code := same.wait(t, 30*time.Second); code != 6 {
		t.Fatalf("second agent in the same install root: exit %d, want 6; stderr: %s", code, same.stderrText())
	}
	if !strings.Contains(same.stderrText(), "another edge-agent is using") {
		t.Fatalf("same root: stderr %q", same.stderrText())
	}
	if !agent.running() {
		t.Fatal("the first agent died")
	}
	if first.pid() != agent.pid() {
		t.Fatal("the refused agent took over the pid file")
	}
	if code := first.stop(agent); code != 0 {
		t.Errorf("stop exit %d", code)
	}
}

// A bad config: start and config check exit 78 (EX_CONFIG) and name each key with its
// line:column.
func TestBadConfig(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{port: deadPort(t)})
	bad := `agent:
  bulk-max-size: lots
queue:
  path: data/wal.db
  bogus-key: 1
input:
  type: file
  paths: ["in/*.log"]
output:
  type: transport
  endpoint: 127.0.0.1:1
  token: t0ken-value
`
	if err := os.WriteFile(root.configPath(), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	wantKeys := []*regexp.Regexp{
		regexp.MustCompile(`agent\.yaml:2:\d+: .*agent\.bulk-max-size`),
		regexp.MustCompile(`agent\.yaml:5:\d+: .*queue\.bogus-key`),
	}
	p := root.start()
	if code := p.wait(t, 30*time.Second); code != 78 {
		t.Fatalf("start with a bad config: exit %d, want 78; stderr: %s", code, p.stderrText())
	}
	for _, re := range wantKeys {
		if !re.MatchString(p.stderrText()) {
			t.Errorf("start stderr lacks %s:\n%s", re, p.stderrText())
		}
	}
	if _, err := os.Stat(root.path("edge-agent.pid")); !os.IsNotExist(err) {
		t.Error("a refused start left a pid file")
	}

	// Detached, the child's code and message come back to the caller.
	_, errOut, code := root.cli("start", "--background")
	if code != 78 || !wantKeys[1].MatchString(errOut) {
		t.Fatalf("start --background with a bad config: exit %d, want 78 naming queue.bogus-key; stderr: %s", code, errOut)
	}

	_, errOut, code = root.cli("config", "check", root.configPath())
	if code != 78 {
		t.Fatalf("config check: exit %d, want 78; %s", code, errOut)
	}
	for _, re := range wantKeys {
		if !re.MatchString(errOut) {
			t.Errorf("config check output lacks %s:\n%s", re, errOut)
		}
	}
	if strings.Contains(errOut, "t0ken-value") {
		t.Error("config check printed the token")
	}

	good := newRoot(t, options{port: deadPort(t)})
	if out, errOut, code := good.cli("config", "check", good.configPath()); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("config check of a good file: exit %d, %q %q", code, out, errOut)
	}
}

// A wrong token: the engine answers AUTH_FAILED. By default the agent keeps
// tailing into its WAL, logs an ERROR naming output.token at each try and
// charges no row; restarted with the right token it delivers everything,
// once. With output.on-refusal: exit it stops with exit 4 instead.
func TestAuthFailed(t *testing.T) {
	skipShort(t)
	const wrong, right = "wrong-token-000000", "e2e-token-0123456789"
	t.Run("retry", func(t *testing.T) {
		rc := startReceiver(t, right)
		port := rc.port
		root := newRoot(t, options{port: port, token: wrong})
		want := makeLines(t.Name(), 0, 20)
		refusedThenFixed(t, root, rc, want, "engine refused the token (AUTH_FAILED)", "output.token", func() {
			root.opts.token = right
		})
		if containsAny(root.logText(), wrong, right) {
			t.Error("a token appears in the log")
		}
	})
	t.Run("exit", func(t *testing.T) {
		port := startReceiver(t, right).port
		root := newRoot(t, options{port: port, token: wrong, onRefusal: "exit"})
		root.createFile("in/app.log").lines(makeLines(t.Name(), 0, 10))
		p := root.start()
		code := p.wait(t, 30*time.Second)
		if code != 4 {
			t.Fatalf("exit %d, want 4; stderr: %s", code, p.stderrText())
		}
		msg := p.stderrText()
		if !strings.Contains(msg, "output.token") {
			t.Fatalf("message does not name output.token: %s", msg)
		}
		if containsAny(msg+root.logText(), wrong, right) {
			t.Error("a token appears in the output or the log")
		}
	})
}

// The engine holds another AES key: it answers DECRYPT_FAILED. By default
// the agent keeps running and delivers everything once restarted with the
// engine's key; with output.on-refusal: exit it stops with exit 5.
func TestDecryptFailed(t *testing.T) {
	skipShort(t)
	agentKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	engineKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
	packet := func(port int, onRefusal string) options {
		return options{port: port, packetMode: "PACKET", compression: "gzip", encryption: "aes_gcm", keyB64: agentKey, onRefusal: onRefusal}
	}
	t.Run("retry", func(t *testing.T) {
		rc := startReceiver(t, "e2e-token-0123456789", "--packet-mode", "packet", "--secret-key", engineKey)
		port := rc.port
		root := newRoot(t, packet(port, ""))
		want := makeLines(t.Name(), 0, 20)
		refusedThenFixed(t, root, rc, want, "engine could not decrypt the payload (DECRYPT_FAILED)", "aes-secret-key", func() {
			root.opts.keyB64 = engineKey
		})
		if containsAny(root.logText(), agentKey, engineKey) {
			t.Error("an AES key appears in the log")
		}
	})
	t.Run("exit", func(t *testing.T) {
		port := startReceiver(t, "e2e-token-0123456789", "--packet-mode", "packet", "--secret-key", engineKey).port
		root := newRoot(t, packet(port, "exit"))
		root.createFile("in/app.log").lines(makeLines(t.Name(), 0, 10))
		p := root.start()
		if code := p.wait(t, 30*time.Second); code != 5 {
			t.Fatalf("exit %d, want 5; stderr: %s", code, p.stderrText())
		}
		if msg := p.stderrText(); !strings.Contains(msg, "aes-secret-key") {
			t.Fatalf("message does not name the key setting: %s", msg)
		}
		if containsAny(p.stderrText()+root.logText(), agentKey, engineKey) {
			t.Error("an AES key appears in the output or the log")
		}
	})
}

// refusedThenFixed runs an agent the engine refuses: it must keep running
// and reading, log refused (naming key) at each try, and leave every row
// PENDING with no attempt charged; then fix corrects the config and a
// restart delivers every line exactly once.
func refusedThenFixed(t *testing.T, root *agentRoot, rc *receiver, want []string, refused, key string, fix func()) {
	t.Helper()
	root.useAPI() // db wal-summary while it runs
	root.writeConfig()
	w := root.createFile("in/app.log")
	w.lines(want[:10])
	agent := root.startReady()
	eventually(t, 30*time.Second, "two refused tries logged", func() bool {
		n := 0
		for line := range strings.Lines(root.logText()) {
			// The client's own ERROR quotes the refusal too; the agent's
			// is the one that says it retries.
			if containsAll(line, refused, "retried at the maximum backoff", key) {
				n++
			}
		}
		return n >= 2
	})
	w.lines(want[10:])
	eventually(t, 30*time.Second, "every line in the WAL", func() bool {
		out, _, code := root.cli("db", "wal-summary")
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); code == 0 && len(f) >= 2 && f[0] == "total" {
				return f[1] == strconv.Itoa(len(want))
			}
		}
		return false
	})
	if !agent.running() {
		t.Fatalf("agent exited on a refusal: %s", agent.stderrText())
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d, want 0", code)
	}
	out, errOut, code := root.cli("db", "wal-list", "--limit", "0")
	if code != 0 {
		t.Fatalf("db wal-list: exit %d %s", code, errOut)
	}
	rows := 0
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if _, err := strconv.ParseUint(f[0], 10, 64); err != nil {
			continue // the header and the hints
		}
		rows++
		if f[2] != "PENDING" || f[3] != "0" {
			t.Fatalf("row %s is %s with %s attempts, want PENDING with 0:\n%s", f[0], f[2], f[3], out)
		}
	}
	if rows != len(want) {
		t.Fatalf("WAL holds %d rows, want %d:\n%s", rows, len(want), out)
	}

	fix()
	root.writeConfig()
	agent = root.startReady()
	d := rc.waitDelivered(want, deliverTimeout)
	if d.duplicates != 0 {
		t.Errorf("%s after the fix", d)
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
}

// With http.listen off, db cannot reach a running agent's WAL: the read
// and write commands fail saying so (never opening the file beside the
// agent); write commands still refuse without --yes first. Once the agent
// stopped, they read the file.
func TestDBWhileRunningWithoutAPI(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{port: deadPort(t)}) // no engine: rows stay PENDING
	want := makeLines(t.Name(), 0, 300)
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()
	for _, args := range [][]string{{"db", "wal-summary"}, {"db", "info"}, {"db", "wal-retry-dead", "--yes"}} {
		out, errOut, code := root.cli(args...)
		if code == 0 || !strings.Contains(errOut, "http.listen: off") {
			t.Errorf("%v while running without API: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	out, errOut, code := root.cli("db", "wal-purge-dead")
	if code == 0 || !strings.Contains(out+errOut, "--yes") {
		t.Errorf("wal-purge-dead without --yes: exit %d %s %s", code, out, errOut)
	}
	if !agent.running() {
		t.Fatal("agent died during db commands")
	}
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit %d", code)
	}
	out, errOut, code = root.cli("db", "wal-summary")
	if code != 0 || !strings.Contains(out, "PENDING") {
		t.Fatalf("db wal-summary on the stopped agent: exit %d\n%s%s", code, out, errOut)
	}
}

// What the agent creates is not more open than it must be: the data dir
// and the WAL are the agent's alone; logs, the pid and id files are
// readable by its group (adm, so operators can read them) and nobody else.
func TestCreatedFileModes(t *testing.T) {
	skipShort(t)
	root := newRoot(t, options{port: deadPort(t)})
	agent := root.startReady()
	want := map[string]os.FileMode{
		"data":               0o700,
		"data/wal.db":        0o600,
		"log":                0o750,
		"log/edge-agent.log": 0o640,
		"edge-agent.pid":     0o640,
		"edge-agent.id":      0o640,
	}
	for rel, perm := range want {
		st, err := os.Stat(root.path(rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		// The umask may take bits away, never add them.
		if extra := st.Mode().Perm() &^ perm; extra != 0 {
			t.Errorf("%s has mode %v, want at most %v", rel, st.Mode().Perm(), perm)
		}
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
}
