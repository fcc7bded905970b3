//go:build unix

package e2e

import (
	"bufio"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A collector authenticated to a relay sends its token again in every
// wrong place. The relay refuses each request, and the token shows
// nowhere an operator or a ticket would see it: /debug/status, /metrics,
// the log file and the diagnostics bundle (status.json included).
func TestRelayEchoesNoToken(t *testing.T) {
	token := agentToken(0)
	rc := startReceiver(t, "engine-token-0123456789")
	hold := holdPort(t)
	relay := newRoot(t, options{port: rc.port, token: "engine-token-0123456789", api: true,
		inputs: relayInput(hold.port, 1, "    packet-mode: PACKET\n    max-line-bytes: 1024\n")})
	hold.release()
	proc := relay.startReady()
	addr := "127.0.0.1:" + strconv.Itoa(hold.port)

	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(conn)
	exchange := func(line, want string) {
		t.Helper()
		if _, err := conn.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != want+"\n" {
			t.Fatalf("%q answered %q, %v; want %s", line, got, err, want)
		}
	}
	secrets := []string{token, "000-abcdef"}
	noSecret := func(where, text string) {
		t.Helper()
		if containsAny(text, secrets...) {
			t.Errorf("%s holds the collector's token", where)
		}
	}
	// statusAfter waits for the collector's last_error to describe request
	// n (last_error holds only the latest refusal) and checks it.
	statusAfter := func(n int) string {
		t.Helper()
		var status string
		want := "request " + strconv.Itoa(n) + ": "
		eventually(t, 10*time.Second, "status describes "+want, func() bool {
			_, status = relay.apiGet(t, "/debug/status")
			return strings.Contains(status, want) || containsAny(status, secrets...)
		})
		noSecret("/debug/status after "+want, status)
		return status
	}
	exchange("__AUTH__:"+token, "ACK")
	exchange(token, "BAD_REQUEST")
	statusAfter(1)
	// The bundle of the headline case: the token sent again as a bare line.
	out := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if _, stderr, code := relay.cli("diagnostics", "--out", out); code != 0 {
		t.Fatalf("diagnostics: exit %d: %s", code, stderr)
	}
	bundle := untarBundle(t, readBytes(t, out))
	if !strings.Contains(bundle["status.json"], "request 1: BAD_REQUEST") {
		t.Errorf("bundle status.json does not describe the refusal:\n%s", bundle["status.json"])
	}
	for name, body := range bundle {
		noSecret("diagnostics after request 1: "+name, body)
	}
	for i, x := range []struct{ line, reply string }{
		{"__BATCH__:" + token + ":x", "INVALID_PARAM"},
		{"__BATCH__:" + token, "BAD_REQUEST"},
		{"__COMMIT__:" + token, "INVALID_PARAM"},
		{"__AUTH__:" + token, "BAD_REQUEST"},
		{"SEND " + token, "BAD_REQUEST"},
		{"__BATCH__:1:" + token, "DECODE_FAILED"},
		{`__BATCH__:2:{"payload":"aGk=","compression":"` + token + `"}`, "DECODE_FAILED"},
		{`__BATCH__:3:{"payload":"aGk=","encryption":"` + token + `"}`, "DECODE_FAILED"},
		{`__BATCH__:4:{"payload":"aGk=","encryption":"aes_gcm","iv":"` + token + `"}`, "DECRYPT_FAILED"},
	} {
		exchange(x.line, x.reply)
		statusAfter(i + 2)
	}
	exchange(strings.Repeat(token, 100), "BAD_REQUEST")

	// A wrong token with the right one inside it.
	wrong, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	_ = wrong.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := wrong.Write([]byte("__AUTH__:x" + token + "\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := bufio.NewReader(wrong).ReadString('\n'); err != nil || got != "AUTH_FAILED\n" {
		t.Fatalf("a wrong token answered %q, %v", got, err)
	}

	// The refusals are there, described.
	var status string
	eventually(t, 10*time.Second, "status shows the collector's last error", func() bool {
		_, status = relay.apiGet(t, "/debug/status")
		return strings.Contains(status, "request line over the limit of 1024 bytes")
	})
	eventually(t, 10*time.Second, "the relay logs the failed authentication", func() bool {
		return strings.Contains(relay.logText(), "failed to authenticate")
	})
	_, metrics := httpGet(t, relay.apiBase()+"/metrics")
	if _, stderr, code := relay.cli("diagnostics", "--out", out); code != 0 {
		t.Fatalf("diagnostics: exit %d: %s", code, stderr)
	}
	bundle = untarBundle(t, readBytes(t, out))
	if _, ok := bundle["status.json"]; !ok {
		t.Errorf("bundle without status.json: %d files", len(bundle))
	}
	for name, body := range bundle {
		noSecret("diagnostics "+name, body)
	}
	noSecret("/debug/status", status)
	noSecret("/metrics", metrics)
	if code := relay.stop(proc); code != 0 {
		t.Errorf("relay stop exit %d", code)
	}
	noSecret("the log file", relay.logText())
	noSecret("stderr", proc.stderrText())
}
