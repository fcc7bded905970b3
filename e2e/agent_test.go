//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// options of a generated agent.yaml. Zero values take suite defaults tuned
// for speed: short flush, scan and backoff intervals.
type options struct {
	port        int
	token       string
	paths       []string // globs; default in/*.log
	packetMode  string   // RAW (default) or PACKET
	compression string
	encryption  string
	keyB64      string
	queuePath   string // default data/wal.db
	onRefusal   string // output.on-refusal; default: the agent's (retry)
	extra       string // appended YAML (must keep the section structure valid)
	// inputs, when set, is written instead of the input section (an
	// `inputs:` list, say); paths are then ignored.
	inputs string
	// httpListen is http.listen; default off, so agents of parallel tests
	// never race for the default port.
	httpListen string
	// api gives the agent an http.listen of its own on loopback (see
	// useAPI), for tests that read its API or run db commands while it
	// runs: db reaches a running agent's WAL only through its API.
	api bool
	// maxAttempts is retry.max-attempts (default 1000), sendAttempts
	// output.max-batch-send-attempts (default the agent's), retentionMs
	// queue.acked-retention-ms (default the agent's).
	maxAttempts, sendAttempts, retentionMs int
	// exclude is input.exclude: base-name patterns (*.gz) as they are,
	// the others anchored at the root like paths.
	exclude []string
	// tailExisting sets read-from-beginning: false (files present when a
	// path is first configured are tailed from their end).
	tailExisting bool
	// outputExtra is appended to the output section (indented YAML).
	outputExtra string
	// queueExtra is appended to the queue section (indented YAML).
	queueExtra string
	// endpoints, when set, is written as output.endpoints (loopback ports)
	// instead of endpoint, with endpointMode as output.endpoint-mode.
	endpoints    []int
	endpointMode string
	// guarantee is agent.delivery-guarantee (default BEST_EFFORT);
	// checkpointPollMs and checkpointTimeoutMs, when set, its
	// agent.checkpoint-poll-ms and agent.checkpoint-timeout-ms.
	guarantee                             string
	checkpointPollMs, checkpointTimeoutMs int
	// account is agent.account.
	account bool
}

// agentRoot is one install root: config/, in/ (watched files), data/, log/.
type agentRoot struct {
	t    *testing.T
	dir  string
	opts options
	// apiHold keeps the port of http.listen bound until the agent starts.
	apiHold *heldPort
}

func newRoot(t *testing.T, opts options) *agentRoot {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"config", "in"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := &agentRoot{t: t, dir: dir, opts: opts}
	if opts.api {
		r.useAPI()
	}
	r.writeConfig()
	t.Cleanup(func() {
		r.killDetached()
		if t.Failed() {
			t.Logf("agent log (%s):\n%s", r.dir, tail(r.path("log/edge-agent.log"), 30))
		}
	})
	return r
}

// useAPI sets http.listen to a loopback port held until the next start
// (the tests' own API clients find the API through http.listen; port 0
// is TestCLIFindsAnAPIOnAFreePort's). The caller writes the config.
func (r *agentRoot) useAPI() {
	r.opts.api = true
	r.apiHold = holdPort(r.t)
	r.opts.httpListen = "127.0.0.1:" + strconv.Itoa(r.apiHold.port)
}

// apiBase is the URL of the agent's API, as the last start configured it.
func (r *agentRoot) apiBase() string { return "http://" + r.opts.httpListen }

func (r *agentRoot) path(rel string) string { return filepath.Join(r.dir, rel) }

func (r *agentRoot) configPath() string { return r.path("config/agent.yaml") }

func (r *agentRoot) writeConfig() {
	if err := os.WriteFile(r.configPath(), []byte(r.configText()), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// configText is the agent.yaml that r.opts describe.
func (r *agentRoot) configText() string {
	o := r.opts
	if o.token == "" {
		o.token = "e2e-token-0123456789"
	}
	if len(o.paths) == 0 {
		o.paths = []string{"in/*.log"}
	}
	if o.packetMode == "" {
		o.packetMode = "RAW"
	}
	if o.queuePath == "" {
		o.queuePath = "data/wal.db"
	}
	if o.maxAttempts == 0 {
		o.maxAttempts = 1000
	}
	if o.guarantee == "" {
		o.guarantee = "BEST_EFFORT"
	}
	agentKeys := ""
	if o.checkpointPollMs != 0 {
		agentKeys += fmt.Sprintf("  checkpoint-poll-ms: %d\n", o.checkpointPollMs)
	}
	if o.checkpointTimeoutMs != 0 {
		agentKeys += fmt.Sprintf("  checkpoint-timeout-ms: %d\n", o.checkpointTimeoutMs)
	}
	if o.account {
		agentKeys += "  account: true\n"
	}
	retention := ""
	if o.retentionMs != 0 {
		retention = fmt.Sprintf("  acked-retention-ms: %d\n", o.retentionMs)
	}
	retention += o.queueExtra
	// baseNames leaves patterns without a separator as they are: exclude
	// matches those against the base name anywhere.
	quoted := func(list []string, baseNames bool) string {
		var out []string
		for _, p := range list {
			if !filepath.IsAbs(p) && (!baseNames || strings.Contains(p, "/")) {
				p = filepath.Join(r.dir, p)
			}
			out = append(out, strconv.Quote(p))
		}
		return strings.Join(out, ", ")
	}
	inputSection := o.inputs
	if inputSection == "" {
		inputSection = fmt.Sprintf("input:\n  type: file\n  paths: [%s]\n  exclude: [%s]\n  read-from-beginning: %t\n  glob-scan-interval-ms: 200\n",
			quoted(o.paths, false), quoted(o.exclude, true), !o.tailExisting)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `agent:
  delivery-guarantee: %s
%s  idle-sleep-ms: 20
  bulk-max-size: 256
  flush-interval-ms: 100
  shutdown-timeout-ms: 5000
%squeue:
  path: %s
%sretry:
  max-attempts: %d
  backoff-ms: 50
  backoff-max-ms: 500
output:
  type: transport
  %s
  token: %s
  connect-timeout-ms: 1000
  read-timeout-ms: 5000
  initial-backoff-ms: 50
  max-backoff-ms: 500
  packet-mode: %s
`, o.guarantee, agentKeys, inputSection, strconv.Quote(o.queuePath), retention, o.maxAttempts, endpointKeys(o), strconv.Quote(o.token), o.packetMode)
	if o.compression != "" {
		fmt.Fprintf(&b, "  compression: %s\n", o.compression)
	}
	if o.encryption != "" {
		fmt.Fprintf(&b, "  encryption: %s\n", o.encryption)
	}
	if o.keyB64 != "" {
		fmt.Fprintf(&b, "  aes-secret-key-base64: %s\n", strconv.Quote(o.keyB64))
	}
	if o.onRefusal != "" {
		fmt.Fprintf(&b, "  on-refusal: %s\n", o.onRefusal)
	}
	if o.sendAttempts != 0 {
		fmt.Fprintf(&b, "  max-batch-send-attempts: %d\n", o.sendAttempts)
	}
	b.WriteString(o.outputExtra)
	if o.httpListen == "" {
		o.httpListen = "off"
	}
	fmt.Fprintf(&b, "http:\n  listen: %s\n", strconv.Quote(o.httpListen))
	b.WriteString("log:\n  level: debug\n")
	b.WriteString(o.extra)
	return b.String()
}

// endpointKeys is output.endpoint, or output.endpoints and
// output.endpoint-mode.
func endpointKeys(o options) string {
	if len(o.endpoints) == 0 {
		return fmt.Sprintf("endpoint: 127.0.0.1:%d", o.port)
	}
	var eps []string
	for _, p := range o.endpoints {
		eps = append(eps, fmt.Sprintf("127.0.0.1:%d", p))
	}
	mode := o.endpointMode
	if mode == "" {
		mode = "failover"
	}
	return fmt.Sprintf("endpoints: [%s]\n  endpoint-mode: %s", strings.Join(eps, ", "), mode)
}

// env is the agent's whole environment: nothing from the test process
// leaks in except what a Go binary needs to run.
func (r *agentRoot) env(extra ...string) []string {
	env := []string{
		"EDGE_AGENT_HOME=" + r.dir,
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
	}
	return append(env, extra...)
}

// cli runs one edge-agent command to completion.
func (r *agentRoot) cli(args ...string) (stdout, stderr string, code int) {
	r.t.Helper()
	return run(r.t, r.dir, r.env(), bins.agent, args...)
}

// start runs `edge-agent start` in the foreground as a child process.
func (r *agentRoot) start(args ...string) *proc {
	r.t.Helper()
	return r.startEnv(nil, args...)
}

// startEnv is start with extra environment variables.
func (r *agentRoot) startEnv(env []string, args ...string) *proc {
	r.t.Helper()
	if r.apiHold != nil {
		r.apiHold.release()
		r.apiHold = nil
	}
	return startProc(r.t, "edge-agent", r.dir, r.env(env...), bins.agent, append([]string{"start"}, args...)...)
}

// startReady starts the agent and waits for its readiness line. With
// useAPI, another socket may take the API's port between its release and
// the agent's bind: the start is then retried on another port, bounded.
func (r *agentRoot) startReady(args ...string) *proc {
	r.t.Helper()
	for attempt := 1; ; attempt++ {
		before := r.readyLines()
		p := r.start(args...)
		if r.awaitReady(p, before) {
			return p
		}
		msg := p.stderrText()
		if !r.opts.api || attempt == apiStartAttempts || !strings.Contains(msg, "address already in use") {
			r.t.Fatalf("agent exited before it was ready: %s", msg)
		}
		r.t.Logf("start %d: the API's port was taken, trying another: %s", attempt, msg)
		r.useAPI()
		r.writeConfig()
	}
}

// apiStartAttempts bounds startReady's retries on a taken API port.
const apiStartAttempts = 5

// waitReady waits until p owns the pid file and a readiness line beyond
// the first `before` ones is logged (the log file is kept across restarts).
func (r *agentRoot) waitReady(p *proc, before int) {
	r.t.Helper()
	if !r.awaitReady(p, before) {
		r.t.Fatalf("agent exited before it was ready: %s", p.stderrText())
	}
}

// awaitReady is waitReady reporting an agent that exited instead.
func (r *agentRoot) awaitReady(p *proc, before int) bool {
	r.t.Helper()
	ready := false
	eventually(r.t, 20*time.Second, "BOOTSTRAP_READY", func() bool {
		ready = r.pid() == p.pid() && r.readyLines() > before
		return ready || !p.running()
	})
	return ready
}

func (r *agentRoot) hasReadyLine() bool { return r.readyLines() > 0 }

func (r *agentRoot) readyLines() int { return strings.Count(r.logText(), "BOOTSTRAP_READY") }

// connectFailures counts the client's failed connection attempts logged
// so far.
func (r *agentRoot) connectFailures() int {
	return strings.Count(r.logText(), "edgesocket connect failed")
}

func (r *agentRoot) logText() string { return readText(r.path("log/edge-agent.log")) }

// pid is the pid in the pid file, 0 without one.
func (r *agentRoot) pid() int {
	n, err := strconv.Atoi(strings.TrimSpace(readText(r.path("edge-agent.pid"))))
	if err != nil {
		return 0
	}
	return n
}

// stop sends SIGTERM and returns the exit code of a graceful stop.
func (r *agentRoot) stop(p *proc) int {
	r.t.Helper()
	p.signal(r.t, syscall.SIGTERM)
	return p.wait(r.t, 30*time.Second)
}

// killDetached kills an agent that `start --background` detached: it is
// not a child of the test, so only the pid file finds it.
func (r *agentRoot) killDetached() {
	if pid := r.pid(); pid > 0 && pid != os.Getpid() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// writer appends lines to a watched file the way applications do.
type writer struct {
	t    *testing.T
	f    *os.File
	path string
}

func (r *agentRoot) createFile(rel string) *writer {
	r.t.Helper()
	f, err := os.OpenFile(r.path(rel), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { f.Close() })
	return &writer{t: r.t, f: f, path: r.path(rel)}
}

// lines writes the given lines, each followed by '\n', in one write.
func (w *writer) lines(lines []string) {
	w.t.Helper()
	if len(lines) == 0 {
		return
	}
	if _, err := w.f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		w.t.Fatal(err)
	}
}

func (w *writer) close() { w.f.Close() }

// makeLines returns n distinct lines tagged with the test name, so a
// stray delivery from another test could never be counted.
func makeLines(tag string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s line %06d: the quick brown fox \"jumps\" over \\ the lazy dog é", tag, from+i)
	}
	return out
}
