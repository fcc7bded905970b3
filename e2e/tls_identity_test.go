//go:build unix

package e2e

import (
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// testCA is a throwaway certificate authority made by a test.
type testCA struct {
	transporttest.Cert
	pem string // path of the CA certificate (PEM)
}

// newTestCA creates a self-signed CA and writes its certificate to
// dir/name.pem.
func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	c := transporttest.NewCert(t, transporttest.CertOptions{Name: name, Dir: dir})
	return &testCA{Cert: c, pem: c.CertFile}
}

// serverCert issues a server certificate for 127.0.0.1 and writes it and
// its key to dir/name.pem and dir/name.key.
func (ca *testCA) serverCert(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	c := transporttest.NewCert(t, transporttest.CertOptions{Name: name, Dir: dir, Parent: &ca.Cert})
	return c.CertFile, c.KeyFile
}

// editConfig rewrites the generated agent.yaml: each pair of old/new is
// replaced (old must occur exactly once), so a test can add keys inside a
// section that options does not cover.
func (r *agentRoot) editConfig(oldNew ...string) {
	r.t.Helper()
	text := readText(r.configPath())
	for i := 0; i+1 < len(oldNew); i += 2 {
		if n := strings.Count(text, oldNew[i]); n != 1 {
			r.t.Fatalf("agent.yaml holds %q %d times, want once:\n%s", oldNew[i], n, text)
		}
		text = strings.Replace(text, oldNew[i], oldNew[i+1], 1)
	}
	if err := os.WriteFile(r.configPath(), []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// enableTLS adds output.tls to agent.yaml: verify the engine with caFile
// and expect 127.0.0.1 in its certificate. The output section is the one
// right before http: in the generated file.
func (r *agentRoot) enableTLS(caFile string) {
	r.t.Helper()
	r.editConfig("\nhttp:\n", "\n  tls:\n    enabled: true\n    ca-file: "+strconv.Quote(caFile)+"\n    server-name: 127.0.0.1\nhttp:\n")
}

// walStatusCounts parses `edge-agent db wal-summary`: status -> row count.
func walStatusCounts(t *testing.T, out string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "PENDING", "SENDING", "ACKED", "DEAD", "total":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("wal-summary line %q: %v", line, err)
			}
			counts[f[0]] = n
		}
	}
	if _, ok := counts["total"]; !ok {
		t.Fatalf("wal-summary output without a total line:\n%s", out)
	}
	return counts
}

// output.tls against a receiver serving TLS with a certificate from a CA
// made here:
//   - trusted: the agent trusts that CA; every line arrives with its exact
//     text.
//   - untrusted-ca: the agent trusts another CA. The handshake fails, which
//     is "engine unavailable": nothing arrives, the agent keeps running and
//     reading into its WAL, and the rows go back to PENDING uncharged
//     (attempts 0, never DEAD, even with retry.max-attempts 1), while the
//     log names the TLS error. Between handshakes the claimed rows show as
//     SENDING: they are PENDING only while the sender backs off.
func TestTLSDelivery(t *testing.T) {
	skipShort(t)
	pki := t.TempDir()
	ca := newTestCA(t, pki, "ca")
	certFile, keyFile := ca.serverCert(t, pki, "server")
	tlsFlags := []string{"--tls-cert", certFile, "--tls-key", keyFile}

	t.Run("trusted", func(t *testing.T) {
		t.Parallel()
		rc := startReceiver(t, "e2e-token-0123456789", tlsFlags...)
		port := rc.port
		root := newRoot(t, options{port: port})
		root.enableTLS(ca.pem)
		want := makeLines(t.Name(), 0, 2000)
		root.createFile("in/app.log").lines(want)
		agent := root.startReady()
		d := rc.waitDelivered(want, deliverTimeout)
		t.Logf("over TLS: %s", d)
		if d.duplicates != 0 {
			t.Errorf("%d duplicates without any failure", d.duplicates)
		}
		if code := root.stop(agent); code != 0 {
			t.Errorf("stop exit code %d", code)
		}
		rc.stop()
		if summary := tail(rc.p.stderr, 1); !strings.Contains(summary, "done records=2000 ") {
			t.Errorf("receiver summary %q, want done records=2000", summary)
		}
	})

	t.Run("untrusted-ca", func(t *testing.T) {
		t.Parallel()
		other := newTestCA(t, t.TempDir(), "other-ca")
		rc := startReceiver(t, "e2e-token-0123456789", tlsFlags...)
		root := newRoot(t, options{port: rc.port, api: true})
		root.enableTLS(other.pem)
		root.editConfig(
			// One charged failure would make a row DEAD: a failed handshake
			// must never be charged.
			"  max-attempts: 1000\n", "  max-attempts: 1\n",
			// One connect attempt per send: the sender hands the claimed
			// rows back (SENDING -> PENDING) after every failed handshake
			// instead of holding them SENDING through a 16-attempt round
			// (~6 s with these backoffs), so rows are released, uncharged,
			// many times within the wait below.
			"  max-backoff-ms: 500\n", "  max-backoff-ms: 500\n  max-reconnect-cycles: 1\n",
		)
		const n = 300
		want := makeLines(t.Name(), 0, n)
		w := root.createFile("in/app.log")
		w.lines(want[:n/2])
		agent := root.startReady()
		w.lines(want[n/2:]) // reading goes on while the engine is unusable

		// Many handshakes fail (retry backoff 50..500 ms); none may deliver,
		// and the agent must not give up.
		eventually(t, 30*time.Second, "ten failed handshakes", func() bool {
			if got := rc.received(); len(got) != 0 {
				t.Fatalf("%d payloads delivered to an engine whose certificate the agent does not trust", len(got))
			}
			if !agent.running() {
				t.Fatalf("agent exited on a TLS handshake failure: exit %d; stderr: %s", agent.wait(t, time.Second), agent.stderrText())
			}
			return root.connectFailures() >= 10
		})

		var summary string
		var counts map[string]int
		eventually(t, 10*time.Second, "every line PENDING in the WAL", func() bool {
			out, errOut, code := root.cli("db", "wal-summary")
			if code != 0 {
				t.Fatalf("db wal-summary: exit %d\n%s%s", code, out, errOut)
			}
			summary, counts = out, walStatusCounts(t, out)
			if counts["DEAD"] != 0 || counts["ACKED"] != 0 {
				t.Fatalf("rows DEAD or ACKED after TLS handshake failures:\n%s", out)
			}
			return counts["PENDING"] == n && counts["total"] == n
		})
		t.Logf("db wal-summary after TLS handshake failures:\n%s", summary)

		// No row was ever charged an attempt.
		out, errOut, code := root.cli("db", "wal-list", "--limit", "0")
		if code != 0 {
			t.Fatalf("db wal-list: exit %d\n%s%s", code, out, errOut)
		}
		rows, charged := 0, ""
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) < 4 {
				continue
			}
			if _, err := strconv.ParseUint(f[0], 10, 64); err != nil {
				continue // header, "(N rows)", hint
			}
			rows++
			if (f[2] == "DEAD" || f[3] != "0") && charged == "" {
				charged = line
			}
		}
		if charged != "" {
			t.Errorf("row charged by a TLS handshake failure: %s", charged)
		}
		if rows != n {
			t.Errorf("wal-list shows %d rows, want %d:\n%s", rows, n, tailLines(out, 5))
		}

		if got := rc.received(); len(got) != 0 {
			t.Fatalf("%d payloads delivered to an untrusted engine", len(got))
		}
		if !agent.running() {
			t.Fatalf("agent exited on a TLS handshake failure: %s", agent.stderrText())
		}
		logText := strings.ToLower(root.logText())
		if !containsAny(logText, "certificate", "x509") || !strings.Contains(logText, "tls") {
			t.Errorf("the agent log does not mention the TLS certificate error:\n%s", tail(root.path("log/edge-agent.log"), 20))
		}
		for _, line := range strings.Split(root.logText(), "\n") {
			if strings.Contains(line, "certificate") {
				t.Logf("agent log: %s", line)
				break
			}
		}
		if code := root.stop(agent); code != 0 {
			t.Errorf("stop exit code %d", code)
		}
	})
}

// edge-agent.id is lost between two runs: the WAL still knows the input id,
// so the saved positions apply (nothing acked is sent again) and the agent
// writes the original input id back into the new id file once ready.
func TestIDFileRewrittenFromWAL(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port})
	want := makeLines(t.Name(), 0, 1000)
	w := root.createFile("in/app.log")
	w.lines(want[:500])

	agent := root.startReady()
	d := rc.waitDelivered(want[:500], deliverTimeout)
	t.Logf("first run: %s", d)
	if code := root.stop(agent); code != 0 {
		t.Fatalf("graceful stop exit code %d, want 0", code)
	}
	first := maps.Clone(rc.received())

	idFile := root.path("edge-agent.id")
	ids := idFileValues(t, readText(idFile))
	inputID := ids["input.id"]
	if inputID == "" {
		t.Fatalf("no input.id in edge-agent.id:\n%s", readText(idFile))
	}
	if err := os.Remove(idFile); err != nil {
		t.Fatal(err)
	}

	restarted := root.startReady()
	w.lines(want[500:])
	// The id file is written back right after the readiness line.
	var now map[string]string
	eventually(t, 5*time.Second, "edge-agent.id rewritten with the WAL's input id", func() bool {
		now = idFileValues(t, readText(idFile))
		return now["input.id"] == inputID
	})
	t.Logf("id file before: %v; after the restart: %v", ids, now)

	d = rc.waitDelivered(want, deliverTimeout)
	t.Logf("after the restart: %s", d)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	rc.stop() // its output is complete from here
	got := rc.received()
	resent := 0
	for _, line := range want[:500] {
		if got[line] != first[line] {
			resent += got[line] - first[line]
		}
	}
	if resent != 0 {
		t.Errorf("%d lines acked by the first run were sent again after the id file was deleted (saved positions not applied)", resent)
	}
	if d := checkDelivery(want[500:], got); d.duplicates != 0 || len(d.missing) != 0 {
		t.Errorf("lines of the second run: %s", d)
	}
	if now := idFileValues(t, readText(idFile)); now["input.id"] != inputID {
		t.Errorf("edge-agent.id holds input.id=%q after the stop, want the original %q", now["input.id"], inputID)
	}
}

// idFileValues parses edge-agent.id (key=value lines); a missing or
// half-written file gives what could be read.
func idFileValues(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[k] = v
		}
	}
	return out
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
