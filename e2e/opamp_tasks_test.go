//go:build unix

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// taskCapability is the agent's custom capability for operator tasks.
const taskCapability = "io.edge-agent.tasks"

// runTask sends a task to the agent and waits for its result.
func runTask(t *testing.T, srv *opampdev.Server, uid, id, task string) opampdev.TaskResult {
	t.Helper()
	if err := srv.SendTask(uid, id, task, nil); err != nil {
		t.Fatalf("send task %s: %v", task, err)
	}
	return waitResult(t, srv, id)
}

func waitResult(t *testing.T, srv *opampdev.Server, id string) opampdev.TaskResult {
	t.Helper()
	var res opampdev.TaskResult
	eventually(t, opampWait, "the result of task "+id, func() bool {
		var ok bool
		res, ok = srv.Result(id)
		return ok
	})
	return res
}

// backlogCounts are the backlog task's WAL counts by status.
func backlogCounts(t *testing.T, res opampdev.TaskResult) map[string]int {
	t.Helper()
	var d struct {
		WAL struct {
			Statuses []struct {
				Status string `json:"status"`
				Count  int    `json:"count"`
			} `json:"statuses"`
		} `json:"wal"`
	}
	if !res.OK {
		t.Fatalf("backlog failed: %s", res.Error)
	}
	if err := json.Unmarshal(res.Details, &d); err != nil {
		t.Fatalf("backlog details %s: %v", res.Details, err)
	}
	out := map[string]int{}
	for _, s := range d.WAL.Statuses {
		out[s.Status] = s.Count
		out["total"] += s.Count
	}
	return out
}

// Each task over OpAMP and its reply: the capability advertised, backlog
// reports the WAL, retry-dead moves the DEAD rows back (count), purge-dead
// deletes those left DEAD (count), an unknown or malformed task gets a
// clear error, and diagnostics sends the bundle in chunks.
func TestOpAMPTasks(t *testing.T) {
	skipShort(t)
	// Every 4th row gets RETRY; with one attempt it goes DEAD.
	rc := startReceiver(t, "e2e-token-0123456789", "--fault-retry-every", "4")
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: rc.port, maxAttempts: 1, sendAttempts: 1, retentionMs: 3_600_000, extra: managed(srv.Endpoint())})
	agent := root.startReady()
	defer root.stop(agent)
	uid := root.instanceUID()
	waitAgent(t, srv, uid, "the task capability advertised", func(a opampdev.Agent) bool {
		return slices.Contains(a.CustomCapabilities, taskCapability)
	})

	const total = 400
	root.createFile("in/a.log").lines(makeLines(t.Name(), 0, total))
	var c map[string]int
	n := 0
	eventually(t, deliverTimeout, "every row ACKED or DEAD, as the backlog task reports", func() bool {
		n++
		c = backlogCounts(t, runTask(t, srv, uid, "backlog-"+strconv.Itoa(n), "backlog"))
		return c["total"] == total && c["ACKED"]+c["DEAD"] == total
	})
	if c["DEAD"] == 0 {
		t.Fatalf("no DEAD rows: %v", c)
	}

	res := runTask(t, srv, uid, "retry", "retry-dead")
	var changed struct {
		Rows int `json:"rows"`
	}
	if !res.OK || json.Unmarshal(res.Details, &changed) != nil || changed.Rows != c["DEAD"] {
		t.Fatalf("retry-dead: %+v, want %d rows", res, c["DEAD"])
	}
	// The retried rows go out again; every 4th fails again and is DEAD.
	eventually(t, deliverTimeout, "the retried rows settled", func() bool {
		n++
		c = backlogCounts(t, runTask(t, srv, uid, "after-retry-"+strconv.Itoa(n), "backlog"))
		return c["PENDING"]+c["SENDING"] == 0
	})
	res = runTask(t, srv, uid, "purge", "purge-dead")
	if !res.OK || json.Unmarshal(res.Details, &changed) != nil || changed.Rows != c["DEAD"] {
		t.Fatalf("purge-dead: %+v, want %d rows", res, c["DEAD"])
	}
	if after := backlogCounts(t, runTask(t, srv, uid, "after-purge", "backlog")); after["DEAD"] != 0 || after["total"] != c["total"]-c["DEAD"] {
		t.Fatalf("after purge-dead: %v (before %v)", after, c)
	}

	res = runTask(t, srv, uid, "nope", "reread-the-moon")
	if res.OK || !strings.Contains(res.Error, `unknown task "reread-the-moon"`) || !strings.Contains(res.Error, "retry-dead") {
		t.Errorf("unknown task: %+v", res)
	}
	if err := srv.SendCustom(uid, "task", []byte(`{"id":"bad",`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, opampWait, "an answer to the malformed task", func() bool {
		for _, r := range srv.Results() {
			if !r.OK && strings.Contains(r.Error, "malformed task") {
				return true
			}
		}
		return false
	})
	if err := srv.SendTask(uid, "args", "backlog", json.RawMessage(`{"from":3}`)); err != nil {
		t.Fatal(err)
	}
	if res := waitResult(t, srv, "args"); res.OK || !strings.Contains(res.Error, "takes no args") {
		t.Errorf("task with args: %+v", res)
	}

	res = runTask(t, srv, uid, "diag", "diagnostics")
	if !res.OK || res.Problem != "" || res.Bytes == 0 {
		t.Fatalf("diagnostics: %+v", res.Result)
	}
	files := untarBundle(t, res.Attachment)
	for _, name := range []string{"MANIFEST.txt", "config.yaml", "status.json", "metrics.txt", "log-recent.jsonl", "wal-summary.json", "goroutines.txt", "version.txt"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the bundle has no %s: %v", name, slices.Sorted(mapsKeys(files)))
		}
	}
	if !strings.Contains(files["log-recent.jsonl"], "BOOTSTRAP_READY") || !strings.Contains(files["goroutines.txt"], "goroutine ") {
		t.Errorf("log or goroutines missing their content")
	}
	t.Logf("diagnostics over OpAMP: %d bytes in %d chunk(s), files %v", res.Bytes, res.Chunks, slices.Sorted(mapsKeys(files)))
}

// runTaskArgs sends a task with args and waits for its result.
func runTaskArgs(t *testing.T, srv *opampdev.Server, uid, id, task, args string) opampdev.TaskResult {
	t.Helper()
	if err := srv.SendTask(uid, id, task, json.RawMessage(args)); err != nil {
		t.Fatalf("send task %s: %v", task, err)
	}
	return waitResult(t, srv, id)
}

// The reread task over OpAMP: a file already delivered is read again from
// an offset inside a line, so the engine gets the lines from the next
// line's start a second time and the result says how many bytes; bad
// requests get errors naming what is wrong. (Its own test: under the
// faults of TestOpAMPTasks re-read rows would go DEAD.)
func TestOpAMPTaskReread(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: rc.port, extra: managed(srv.Endpoint())})
	agent := root.startReady()
	defer root.stop(agent)
	uid := root.instanceUID()
	want := makeLines(t.Name(), 0, 100)
	root.createFile("in/a.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)
	waitAgent(t, srv, uid, "the task capability advertised", func(a opampdev.Agent) bool {
		return slices.Contains(a.CustomCapabilities, taskCapability)
	})

	path := root.path("in/a.log")
	data := readBytes(t, path)
	start := bytes.Index(data, []byte(want[70]))
	args := fmt.Sprintf(`{"path":%q,"offset":%d}`, path, start-5) // inside line 69: from line 70
	res := runTaskArgs(t, srv, uid, "reread", "reread", args)
	var d struct {
		Input   string `json:"input"`
		Offset  int    `json:"offset"`
		Aligned bool   `json:"aligned_to_next_line"`
		Line    int    `json:"next_line"`
		Reread  int    `json:"reread_bytes"`
		Size    int    `json:"size"`
		Note    string `json:"note"`
	}
	if !res.OK || json.Unmarshal(res.Details, &d) != nil {
		t.Fatalf("reread: %+v", res.Result)
	}
	if d.Offset != start || !d.Aligned || d.Line != 71 || d.Reread != len(data)-start || d.Size != len(data) || d.Input == "" {
		t.Fatalf("reread details %s; want offset %d (the next line), line 71, %d bytes again", res.Details, start, len(data)-start)
	}
	eventually(t, deliverTimeout, "lines 70..99 delivered a second time", func() bool {
		got := rc.received()
		for _, l := range want[70:] {
			if got[l] < 2 {
				return false
			}
		}
		return true
	})
	if got := rc.received(); got[want[69]] != 1 || got[want[0]] != 1 {
		t.Errorf("lines before the offset delivered again: line 69 ×%d, line 0 ×%d", got[want[69]], got[want[0]])
	}
	t.Logf("reread over OpAMP: %s", d.Note)

	for _, tc := range []struct{ name, args, want string }{
		{"a path no input reads", `{"path":"/nowhere/x.log"}`, "/nowhere/x.log"},
		{"an offset beyond the size", fmt.Sprintf(`{"path":%q,"offset":%d}`, path, len(data)+1), fmt.Sprintf("beyond the file's size, %d bytes", len(data))},
		{"no path", `{"offset":1}`, `no "path"`},
		{"a negative offset", fmt.Sprintf(`{"path":%q,"offset":-2}`, path), "negative"},
		{"an unknown arg", fmt.Sprintf(`{"path":%q,"from":2}`, path), `unknown field "from"`},
	} {
		res := runTaskArgs(t, srv, uid, "bad-"+strings.ReplaceAll(tc.name, " ", "-"), "reread", tc.args)
		if res.OK || !strings.Contains(res.Error, tc.want) {
			t.Errorf("reread with %s: %+v; want an error with %q", tc.name, res.Result, tc.want)
		}
	}
	if res := runTaskArgs(t, srv, uid, "bad-not-read", "reread", `{"path":"/nowhere/x.log"}`); !strings.Contains(res.Error, "no file input reads it") {
		t.Errorf("a path no input reads: %q does not say so", res.Error)
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// untarBundle returns the bundle's files by name below its top folder.
func untarBundle(t *testing.T, data []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("bundle is not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		dir, name, _ := strings.Cut(h.Name, "/")
		if !strings.HasPrefix(dir, "edge-agent-diagnostics-") {
			t.Errorf("bundle entry %q outside its folder", h.Name)
		}
		out[name] = string(body)
	}
}

// grepSecrets fails the test for every secret found in any file.
func grepSecrets(t *testing.T, what string, files map[string]string, secrets map[string]string) {
	t.Helper()
	if len(files) < 3 {
		t.Fatalf("%s: only %d files", what, len(files))
	}
	for name, body := range files {
		for kind, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s: %s holds the %s", what, name, kind)
			}
		}
	}
}

// The bundle, over OpAMP and locally from a running and a stopped agent,
// never holds a secret of the config: output token, AES key, API token,
// OpAMP headers (inline and from a file), the API's TLS private key.
func TestDiagnosticsHoldNoSecret(t *testing.T) {
	skipShort(t)
	const token = "tok-SECRET-0123456789abcdef"
	rc := startReceiver(t, token)
	srv := startOpAMP(t, "127.0.0.1:0")
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	certFile, keyFile := ca.serverCert(t, dir, "api")
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	// The key's base64 body lines, which is what would leak.
	var keyLines []string
	for _, l := range strings.Split(string(keyPEM), "\n") {
		if len(l) > 20 && !strings.HasPrefix(l, "-----") {
			keyLines = append(keyLines, l)
		}
	}
	headerFile := filepath.Join(dir, "auth-header")
	const fileHeader = "Bearer HDRFILE-SECRET-42"
	if err := os.WriteFile(headerFile, []byte(fileHeader+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const aesKey = "QUVTLVNFQ1JFVC0xMjM0NTY3ODkwYWJjZGVmZ2hpams=" // 32 bytes
	const apiToken = "API-SECRET-TOKEN-987654321"
	const inlineHeader = "HDR-INLINE-SECRET-77"
	root := newRoot(t, options{port: rc.port, token: token, api: true, keyB64: aesKey, extra: managed(srv.Endpoint()) +
		"    headers:\n      X-Fleet-Key: " + inlineHeader + "\n    headers-file:\n      Authorization: " + strconv.Quote(headerFile) + "\n"})
	root.editConfig("\nhttp:\n", "\nhttp:\n  token: "+apiToken+"\n  tls:\n    cert-file: "+strconv.Quote(certFile)+"\n    key-file: "+strconv.Quote(keyFile)+"\n")
	secrets := map[string]string{"output token": token, "AES key": aesKey, "API token": apiToken,
		"inline OpAMP header": inlineHeader, "OpAMP header from a file": "HDRFILE-SECRET-42"}
	for i, l := range keyLines {
		secrets[fmt.Sprintf("TLS key line %d", i)] = l
	}
	agent := root.startReady()
	uid := root.instanceUID()
	want := makeLines(t.Name(), 0, 20)
	root.createFile("in/a.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)
	waitAgent(t, srv, uid, "the task capability advertised", func(a opampdev.Agent) bool {
		return slices.Contains(a.CustomCapabilities, taskCapability)
	})

	res := runTask(t, srv, uid, "diag", "diagnostics")
	if !res.OK || res.Problem != "" {
		t.Fatalf("diagnostics over OpAMP: %+v", res.Result)
	}
	files := untarBundle(t, res.Attachment)
	if !strings.Contains(files["config.yaml"], "<redacted>") {
		t.Errorf("config.yaml shows no redaction:\n%s", files["config.yaml"])
	}
	grepSecrets(t, "over OpAMP", files, secrets)

	out := filepath.Join(dir, "running.tar.gz")
	if _, stderr, code := root.cli("diagnostics", "--out", out); code != 0 {
		t.Fatalf("diagnostics (running): exit %d: %s", code, stderr)
	}
	running := untarBundle(t, readBytes(t, out))
	if _, ok := running["goroutines.txt"]; !ok {
		t.Errorf("running bundle without goroutines: %v", slices.Sorted(mapsKeys(running)))
	}
	grepSecrets(t, "local, running", running, secrets)

	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	out = filepath.Join(dir, "stopped.tar.gz")
	_, stderr, code := root.cli("diagnostics", "--out", out)
	if code != 0 || !strings.Contains(stderr, "stopped agent's files") {
		t.Fatalf("diagnostics (stopped): exit %d: %s", code, stderr)
	}
	stopped := untarBundle(t, readBytes(t, out))
	var sum struct {
		Counts struct {
			Acked int `json:"acked"`
		} `json:"counts"`
	}
	if err := json.Unmarshal([]byte(stopped["wal-summary.json"]), &sum); err != nil {
		t.Errorf("stopped wal-summary.json %q: %v", stopped["wal-summary.json"], err)
	}
	if !strings.Contains(stopped["log-recent.jsonl"], "BOOTSTRAP_READY") || !strings.Contains(stopped["MANIFEST.txt"], "not running") {
		t.Errorf("stopped bundle: log %d bytes, manifest:\n%s", len(stopped["log-recent.jsonl"]), stopped["MANIFEST.txt"])
	}
	grepSecrets(t, "local, stopped", stopped, secrets)

}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
