//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const topAPIToken = "top-e2e-api-token-0123"

// topRoot is an agent with its API on a port of its own behind a bearer
// token, whose engine is gone: the lines written stay PENDING, so the
// backlog top shows holds still while the test compares it with the API.
func topRoot(t *testing.T) (root *agentRoot, listen string, rows int) {
	t.Helper()
	root = newRoot(t, options{port: deadPort(t), api: true})
	listen = root.opts.httpListen
	cfg := strings.Replace(root.configText(), "http:\n  listen: "+strconv.Quote(listen)+"\n",
		"http:\n  listen: "+strconv.Quote(listen)+"\n  token: "+topAPIToken+"\n", 1)
	if !strings.Contains(cfg, topAPIToken) {
		t.Fatal("http.token not added to the config")
	}
	if err := os.WriteFile(root.configPath(), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	root.startReady()
	rows = 40
	root.createFile("in/app.log").lines(makeLines(t.Name(), 0, rows))
	eventually(t, deliverTimeout, "the lines to be queued", func() bool {
		st := apiStatus(t, listen)
		return st.WAL.Pending+st.WAL.Sending == int64(rows) && st.WAL.Oldest > 0
	})
	return root, listen, rows
}

type topStatus struct {
	WAL struct {
		Pending int64   `json:"pending"`
		Sending int64   `json:"sending"`
		Oldest  float64 `json:"oldest_pending_age_seconds"`
	} `json:"wal"`
	Connection string `json:"connection"`
}

// apiStatus reads /debug/status with the token, as top does.
func apiStatus(t *testing.T, listen string) topStatus {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+listen+"/debug/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+topAPIToken)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET /debug/status: %v", err)
	}
	defer resp.Body.Close()
	var st topStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/status: %d %v", resp.StatusCode, err)
	}
	return st
}

// walLine is the WAL line of a top frame. These agents run BEST_EFFORT,
// where no row is ever held as received.
var walLine = regexp.MustCompile(`wal     pending (\d+)  sending (\d+)  received 0  dead 0  bytes `)

// queued is pending + sending as a frame shows them; -1 without the line.
// The engine is gone, so the agent's tries move rows between the two,
// while their sum is the lines written.
func queued(frame string) int {
	m := walLine.FindStringSubmatch(frame)
	if m == nil {
		return -1
	}
	p, _ := strconv.Atoi(m[1])
	s, _ := strconv.Atoi(m[2])
	return p + s
}

// `top --once` against the real binary: one plain frame with the figures
// the API reports, read with the token from agent.yaml; exit 3 and a
// message when no agent runs.
func TestTopOnce(t *testing.T) {
	skipShort(t)
	root, listen, rows := topRoot(t)
	st := apiStatus(t, listen)
	out, errOut, code := root.cli("top", "--once")
	if code != 0 {
		t.Fatalf("top --once: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := queued(out); got != rows {
		t.Errorf("top --once shows %d rows queued, the API %d:\n%s", got, rows, out)
	}
	for _, want := range []string{
		"edge-agent ", "  running  ", "output  " + st.Connection,
		"in/app.log",
		"FILES (1, all inputs, by lag)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("top --once lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "q quit") {
		t.Errorf("the plain frame holds escapes or key help:\n%q", out)
	}
	t.Logf("top --once:\n%s", out)

	idle := newRoot(t, options{port: deadPort(t), api: true})
	out, errOut, code = idle.cli("top", "--once")
	if code != 3 || !strings.Contains(errOut, "edge-agent is not running") || out != "" {
		t.Errorf("top without an agent: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// tmuxServer is a tmux server of the test's own, on a socket in a temp
// dir; cleanup ends it (and only it) with kill-server.
type tmuxServer struct {
	t    *testing.T
	sock string
}

func startTmux(t *testing.T) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		msg := "tmux is not installed: the interactive view of top is not tested"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		fmt.Fprintf(os.Stderr, "SKIP %s: %s\n", t.Name(), msg)
		t.Skip(msg)
	}
	s := &tmuxServer{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	return s
}

func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *tmuxServer) screen() string {
	out, err := exec.Command("tmux", "-S", s.sock, "capture-pane", "-p", "-t", "top").CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

// waitScreen waits until the pane shows every one of want.
func (s *tmuxServer) waitScreen(what string, want ...string) string {
	s.t.Helper()
	var last string
	eventually(s.t, 20*time.Second, what, func() bool {
		last = s.screen()
		for _, w := range want {
			if !strings.Contains(last, w) {
				return false
			}
		}
		return true
	})
	return last
}

// top as a person uses it: tmux runs it on an 80×24 terminal beside a
// live agent with a backlog; the screen shows the API's numbers, s changes
// the order, p pauses, q quits with exit 0.
func TestTopInTmux(t *testing.T) {
	skipShort(t)
	tm := startTmux(t)
	root, listen, rows := topRoot(t)
	exitFile := filepath.Join(t.TempDir(), "exit")
	script := fmt.Sprintf("cd %s && env -i PATH=%s EDGE_AGENT_HOME=%s TERM=xterm-256color %s top; echo $? > %s",
		shellQuote(root.dir), shellQuote(os.Getenv("PATH")), shellQuote(root.dir), shellQuote(bins.agent), shellQuote(exitFile))
	tm.run("new-session", "-d", "-s", "top", "-x", "80", "-y", "24", "sh", "-c", script)

	st := apiStatus(t, listen)
	screen := tm.waitScreen("top to draw the backlog", "output  "+st.Connection, "in/app.log", "s sort (lag)", "q quit")
	if got := queued(screen); got != rows {
		t.Errorf("the screen shows %d rows queued, the API %d", got, rows)
	}
	t.Logf("top on 80x24 with a backlog:\n%s", screen)
	for i, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		if n := len([]rune(l)); n > 80 || i >= 24 {
			t.Errorf("line %d (%d columns) outside 80x24: %q", i+1, n, l)
		}
	}

	tm.run("send-keys", "-t", "top", "s")
	tm.waitScreen("the sort to change", "by rate", "s sort (rate)")
	tm.run("send-keys", "-t", "top", "p")
	tm.waitScreen("the pause", "[PAUSED]", "p resume")
	tm.run("send-keys", "-t", "top", "q")
	eventually(t, 10*time.Second, "top to exit", func() bool {
		return strings.TrimSpace(readText(exitFile)) != ""
	})
	if code := strings.TrimSpace(readText(exitFile)); code != "0" {
		t.Errorf("top exit %s after q", code)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
