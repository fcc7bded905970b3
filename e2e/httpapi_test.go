//go:build unix

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// httpGet fetches url from the agent's API, without a credential: what
// is open (health, readiness, metrics).
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	return httpDo(t, http.MethodGet, url, nil)
}

// apiGet fetches path with the token the agent wrote to its token file,
// as the CLI run by the agent's user sends it.
func (r *agentRoot) apiGet(t *testing.T, path string) (int, string) {
	t.Helper()
	return httpDo(t, http.MethodGet, r.apiBase()+path, map[string]string{"Authorization": "Bearer " + r.apiToken(t)})
}

// apiToken is the token in the agent's token file.
func (r *agentRoot) apiToken(t *testing.T) string {
	t.Helper()
	tok := strings.TrimSpace(readText(r.path("edge-agent.api-token")))
	if tok == "" {
		t.Fatal("the agent wrote no token to edge-agent.api-token")
	}
	return tok
}

// httpDo sends exactly the headers given ("Host" sets the Host header).
func httpDo(t *testing.T, method, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

var ackedRe = regexp.MustCompile(`(?m)^edge_agent_events_acked_total (\S+)$`)

func ackedMetric(t *testing.T, base string) float64 {
	t.Helper()
	code, body := httpGet(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	m := ackedRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no edge_agent_events_acked_total:\n%s", body)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// statusDoc is the part of status --json and /debug/status checked here.
type statusDoc struct {
	Running    bool   `json:"running"`
	PID        int    `json:"pid"`
	Source     string `json:"source"`
	State      string `json:"state"`
	AgentID    string `json:"agent_id"`
	ConfigHash string `json:"config_hash"`
	Connection string `json:"connection"`
	WAL        struct {
		Pending *int64 `json:"pending"`
		Dead    *int64 `json:"dead"`
	} `json:"wal"`
	Counters *struct {
		Acked uint64 `json:"acked"`
	} `json:"counters"`
	Files []struct {
		Path     string `json:"path"`
		Identity string `json:"identity"`
		Offset   int64  `json:"offset"`
		Lag      int64  `json:"lag_bytes"`
	} `json:"files"`
	DetailError string `json:"detail_error"`
}

// The agent serves its API on http.listen: counters move on /metrics as
// lines are delivered, /healthz and /readyz answer 200, /debug/status and
// `status --json` describe it while it runs, and `status --json` reads the
// WAL once it is stopped.
func TestHTTPAPI(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port, api: true})
	agent := root.startReady()
	base := root.apiBase()

	if got := ackedMetric(t, base); got != 0 {
		t.Fatalf("acked before any line: %v", got)
	}
	want := makeLines(t.Name(), 0, 300)
	root.createFile("in/app.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)
	eventually(t, deliverTimeout, "edge_agent_events_acked_total to reach 300", func() bool {
		return ackedMetric(t, base) == float64(len(want))
	})

	if code, body := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %q", code, body)
	}

	cfgBytes, err := os.ReadFile(root.configPath())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cfgBytes)
	code, body := root.apiGet(t, "/debug/status")
	var doc statusDoc
	if err := json.Unmarshal([]byte(body), &doc); code != http.StatusOK || err != nil {
		t.Fatalf("/debug/status: %d %v\n%s", code, err, body)
	}
	if doc.State != "running" || doc.AgentID == "" || doc.ConfigHash != hex.EncodeToString(sum[:]) ||
		doc.Connection != "connected" || doc.Counters == nil || doc.Counters.Acked != uint64(len(want)) {
		t.Errorf("/debug/status:\n%s", body)
	}
	// The input refreshes its file list once a second.
	eventually(t, deliverTimeout, "/debug/status to list in/app.log fully read", func() bool {
		_, body := root.apiGet(t, "/debug/status")
		var d statusDoc
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		return len(d.Files) == 1 && d.Files[0].Path == root.path("in/app.log") && d.Files[0].Identity != "" &&
			d.Files[0].Offset > 0 && d.Files[0].Lag == 0
	})
	if strings.Contains(body, "e2e-token-0123456789") {
		t.Error("/debug/status shows the token")
	}

	out, _, code := root.cli("status", "--json")
	doc = statusDoc{}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("status --json while running: exit %d, %v\n%s", code, err, out)
	}
	if !doc.Running || doc.PID != agent.pid() || doc.Source != "api" || doc.State != "running" || doc.DetailError != "" {
		t.Errorf("status --json while running:\n%s", out)
	}
	out, _, code = root.cli("status")
	if code != 0 || !regexp.MustCompile(`connection:\s+connected`).MatchString(out) || !strings.Contains(out, "backlog:") {
		t.Errorf("status while running: exit %d\n%s", code, out)
	}
	t.Logf("status while running:\n%s", out)

	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	out, _, code = root.cli("status", "--json")
	doc = statusDoc{}
	if err := json.Unmarshal([]byte(out), &doc); code != 3 || err != nil {
		t.Fatalf("status --json after stop: exit %d, %v\n%s", code, err, out)
	}
	if doc.Running || doc.Source != "wal" || doc.State != "stopped" || doc.WAL.Pending == nil || *doc.WAL.Pending != 0 || doc.DetailError != "" {
		t.Errorf("status --json after stop:\n%s", out)
	}
	t.Logf("status --json after stop:\n%s", out)
}

// A taken http.listen port fails the start with an error naming the key,
// and a non-loopback address without a token is a config error (78).
func TestHTTPListenErrors(t *testing.T) {
	skipShort(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	root := newRoot(t, options{port: deadPort(t), httpListen: taken.Addr().String()})
	p := root.start()
	if code := p.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("start on a taken port: exit %d, want 1", code)
	}
	if msg := p.stderrText() + root.logText(); !strings.Contains(msg, "http.listen") {
		t.Errorf("the failure does not name http.listen:\n%s", msg)
	}

	root = newRoot(t, options{port: deadPort(t), httpListen: "0.0.0.0:0"})
	_, stderr, code := root.cli("config", "check", root.configPath())
	if code != 78 || !strings.Contains(stderr, "http.listen") || !strings.Contains(stderr, "http.token") {
		t.Errorf("config check of 0.0.0.0 without a token: exit %d\n%s", code, stderr)
	}
}

// The engine refuses the token: the agent keeps reading into the WAL,
// /healthz answers 503 with the reason; `edge-agent reload` after the
// token is fixed resumes delivery, /healthz is 200 again, and no line is
// lost or sent twice.
func TestHealthzFollowsARefusedTokenAndItsReload(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port, api: true, token: "wrong-token-000"})
	agent := root.startReady()
	base := root.apiBase()

	want := makeLines(t.Name(), 0, 200)
	root.createFile("in/app.log").lines(want)
	eventually(t, deliverTimeout, "/healthz to report the refused token", func() bool {
		code, body := httpGet(t, base+"/healthz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "auth_failed")
	})
	if got := len(rc.received()); got != 0 {
		t.Fatalf("%d lines delivered with a wrong token", got)
	}

	root.opts.token = "e2e-token-0123456789"
	root.writeConfig()
	if out, errOut, code := root.cli("reload"); code != 0 {
		t.Fatalf("reload: exit %d %s %s", code, out, errOut)
	}
	if d := rc.waitDelivered(want, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after the reload: %s", d)
	}
	eventually(t, deliverTimeout, "/healthz to be 200 after the reload", func() bool {
		code, _ := httpGet(t, base+"/healthz")
		return code == http.StatusOK
	})
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
}

// TestCLIFindsAnAPIOnAFreePort: with http.listen on port 0 the agent
// records the address it bound beside its pid file, and status, top and
// db reach the API through it; a clean stop removes the record.
func TestCLIFindsAnAPIOnAFreePort(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, httpListen: "127.0.0.1:0"})
	agent := root.startReady()
	want := makeLines(t.Name(), 0, 50)
	root.createFile("in/app.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)

	addr := strings.TrimSpace(readText(root.path("edge-agent.api-address")))
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		t.Fatalf("edge-agent.api-address holds %q, want the bound host:port", addr)
	}
	out, errOut, code := root.cli("status", "--json")
	var doc statusDoc
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if !doc.Running || doc.PID != agent.pid() || doc.Source != "api" || doc.State != "running" || doc.DetailError != "" {
		t.Errorf("status --json with http.listen 127.0.0.1:0, want the API's status:\n%s", out)
	}
	if out, errOut, code := root.cli("top", "--once"); code != 0 || !strings.Contains(out, "output  connected") {
		t.Errorf("top --once: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := root.cli("db", "wal-summary"); code != 0 {
		t.Errorf("db wal-summary through the API: exit %d\n%s%s", code, out, errOut)
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	if _, err := os.Stat(root.path("edge-agent.api-address")); !os.IsNotExist(err) {
		t.Errorf("edge-agent.api-address after a clean stop: %v, want it removed", err)
	}
}

// TestAPINeedsTheTokenFile: on the loopback default without http.token,
// the built agent writes a 0600 token file beside its pid file; the db
// routes, diagnostics and the status refuse a request without its token,
// with a foreign Host or Origin (DNS rebinding, a web page), and the
// WAL stays as it was; the CLI reads the token and works; the probes stay
// open; a clean stop removes the file.
func TestAPINeedsTheTokenFile(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true})
	agent := root.startReady()
	want := makeLines(t.Name(), 0, 50)
	root.createFile("in/app.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)

	fi, err := os.Stat(root.path("edge-agent.api-token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("edge-agent.api-token: %v, mode %v; want mode 0600", err, fi.Mode())
	}
	tok := root.apiToken(t)
	if len(tok) != 64 {
		t.Fatalf("the token file holds %d characters, want 64 (32 random bytes, hex)", len(tok))
	}
	bearer := "Bearer " + tok
	base := root.apiBase()
	_, before := root.apiGet(t, "/db/summary")

	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/db/purge-dead"}, {http.MethodPost, "/db/retry-dead"},
		{http.MethodPost, "/db/reread?path=" + root.path("in/app.log")},
		{http.MethodGet, "/db/rows/1"}, {http.MethodGet, "/db/rows"}, {http.MethodGet, "/debug/diagnostics"},
		{http.MethodGet, "/debug/status"},
	} {
		if code, _ := httpDo(t, r.method, base+r.path, nil); code != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d, want 401", r.method, r.path, code)
		}
		if code, _ := httpDo(t, r.method, base+r.path, map[string]string{"Authorization": bearer, "Host": "rebound.example:" + strings.Split(root.opts.httpListen, ":")[1]}); code != http.StatusForbidden {
			t.Errorf("%s %s with the token and a foreign Host: %d, want 403", r.method, r.path, code)
		}
		if code, _ := httpDo(t, r.method, base+r.path, map[string]string{"Authorization": bearer, "Origin": "http://evil.example"}); code != http.StatusForbidden {
			t.Errorf("%s %s with the token and a foreign Origin: %d, want 403", r.method, r.path, code)
		}
	}
	if _, after := root.apiGet(t, "/db/summary"); after != before {
		t.Errorf("refused requests changed the WAL:\n%s\nwas\n%s", after, before)
	}
	if strings.Contains(root.logText(), "file position moved") || strings.Contains(root.logText(), "WAL changed on request") {
		t.Errorf("a refused request was served:\n%s", root.logText())
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _ := httpGet(t, base+p); code != http.StatusOK {
			t.Errorf("%s without a credential: %d, want 200", p, code)
		}
	}

	if code, body := httpDo(t, http.MethodPost, base+"/db/purge-dead", map[string]string{"Authorization": bearer}); code != http.StatusOK {
		t.Errorf("purge-dead with the token: %d %s", code, body)
	}
	if !strings.Contains(root.logText(), `"credential":"token file"`) || strings.Contains(root.logText(), tok) {
		t.Errorf("the accepted change is not logged with its credential's kind, or the token is logged:\n%s", root.logText())
	}
	for _, args := range [][]string{{"status"}, {"db", "wal-summary"}, {"db", "wal-list"}, {"top", "--once"}, {"diagnostics", "--out", root.path("diag.tar.gz")}} {
		if out, errOut, code := root.cli(args...); code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	if _, err := os.Stat(root.path("edge-agent.api-token")); !os.IsNotExist(err) {
		t.Errorf("edge-agent.api-token after a clean stop: %v, want it removed", err)
	}
}
