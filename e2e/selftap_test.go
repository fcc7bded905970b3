//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const selfAPIToken = "self-e2e-api-token-0123"

// selfRoot is an agent with the inputs section inputs writes for its
// root, and its API behind a token.
func selfRoot(t *testing.T, port int, inputs func(*agentRoot) string) *agentRoot {
	t.Helper()
	root := newRoot(t, options{port: port, api: true})
	root.opts.inputs = inputs(root)
	listen := root.opts.httpListen
	cfg := strings.Replace(root.configText(), "http:\n  listen: "+strconv.Quote(listen)+"\n",
		"http:\n  listen: "+strconv.Quote(listen)+"\n  token: "+selfAPIToken+"\n", 1)
	if !strings.Contains(cfg, selfAPIToken) {
		t.Fatal("http.token not added to the config")
	}
	if err := os.WriteFile(root.configPath(), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// selfTaken is the self input's records taken (lines_read), from the
// agent's status.
func selfTaken(t *testing.T, root *agentRoot, id string) int64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, root.apiBase()+"/debug/status", nil)
	req.Header.Set("Authorization", "Bearer "+selfAPIToken)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET /debug/status: %v", err)
	}
	defer resp.Body.Close()
	var st struct {
		Inputs []map[string]any `json:"inputs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("GET /debug/status: %v", err)
	}
	for _, in := range st.Inputs {
		if in["id"] == id {
			n, _ := in["lines_read"].(float64)
			return int64(n)
		}
	}
	t.Fatalf("no input %s in the status: %v", id, st.Inputs)
	return 0
}

// The agent's own WARN records reach the engine through the self input,
// and `edge-agent tap` shows the events an input sends.
func TestSelfInputAndTap(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := selfRoot(t, rc.port, func(r *agentRoot) string {
		return fmt.Sprintf("inputs:\n  - id: app\n    type: file\n    paths: [%q]\n    read-from-beginning: true\n    glob-scan-interval-ms: 200\n  - id: own\n    type: self\n",
			r.path("in/*.log"))
	})
	p := root.startReady()
	defer root.stop(p)

	// A request naming a foreign host is refused with a WARN record.
	req, _ := http.NewRequest(http.MethodGet, root.apiBase()+"/debug/status", nil)
	req.Host = "rebound.example"
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign host answered %d", resp.StatusCode)
	}
	eventually(t, deliverTimeout, "the agent's WARN at the engine", func() bool {
		return strings.Contains(readText(rc.out), "API request refused")
	})

	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := root.cli("tap", "--input", "app", "--stage", "sent", "--rate", "100", "--limit", "3")
		done <- result{out, errOut, code}
	}()
	w := root.createFile("in/app.log")
	defer w.close()
	var res result
	deadline := time.After(deliverTimeout)
	for i := 0; res.code == 0 && res.out == "" && res.errOut == ""; i++ {
		select {
		case res = <-done:
		case <-time.After(100 * time.Millisecond):
			w.lines(makeLines(t.Name(), i, 1))
		case <-deadline:
			t.Fatal("the tap showed no 3 events")
		}
	}
	if res.code != 0 || !strings.Contains(res.errOut, "tap ended (limit reached): 3 shown") {
		t.Fatalf("tap: exit %d\nstdout %q\nstderr %s", res.code, res.out, res.errOut)
	}
	lines := strings.Split(strings.TrimSpace(res.out), "\n")
	if len(lines) != 3 {
		t.Fatalf("tap printed %d lines: %s", len(lines), res.out)
	}
	for _, l := range lines {
		var ev struct {
			Stage, Input string
			Event        map[string]any
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Stage != "sent" || ev.Input != "app" ||
			!strings.Contains(fmt.Sprint(ev.Event["payload"]), t.Name()) {
			t.Fatalf("tap line %s (%v)", l, err)
		}
	}
}

// With the engine down and the self input shipping everything down to
// debug, delivery's failures are never fed back: the records the input
// takes do not grow with the failed attempts, and the log stays small.
func TestSelfInputEngineDownNoRecursion(t *testing.T) {
	skipShort(t)
	root := selfRoot(t, deadPort(t), func(*agentRoot) string { return "inputs:\n  - id: own\n    type: self\n    level: debug\n" })
	p := root.startReady()
	defer root.stop(p)
	eventually(t, deliverTimeout, "3 failed connects", func() bool { return root.connectFailures() >= 3 })
	f1, taken1 := root.connectFailures(), selfTaken(t, root, "own")
	eventually(t, deliverTimeout, "8 more failed connects", func() bool { return root.connectFailures() >= f1+8 })
	taken2 := selfTaken(t, root, "own")
	// A periodic summary may fall in between; a failure fed back would
	// add at least one record per attempt.
	if taken2-taken1 > 2 {
		t.Fatalf("the self input took %d records during %d failed attempts", taken2-taken1, root.connectFailures()-f1)
	}
	if fi, err := os.Stat(root.path("log/edge-agent.log")); err != nil || fi.Size() > 1<<20 {
		t.Fatalf("log file: %v, %d bytes", err, fi.Size())
	}
	t.Logf("own records taken: %d; failed connects: %d", taken2, root.connectFailures())
}
