//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback port nothing listens on now (network "tcp"
// or "udp"); the agent binds it a moment later.
func syslogFreePort(t *testing.T, network string) int {
	t.Helper()
	switch network {
	case "udp":
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	default:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
}

// syslogTally counts the "msg" of every syslog event the receiver wrote,
// parsing only what was added since the last call.
type syslogTally struct {
	path   string
	off    int
	counts map[string]int
}

func newSyslogTally(rc *receiver) *syslogTally {
	return &syslogTally{path: rc.out, counts: map[string]int{}}
}

func (s *syslogTally) update(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(s.path)
	if err != nil {
		return s.counts
	}
	for s.off < len(b) {
		i := bytes.IndexByte(b[s.off:], '\n')
		if i < 0 {
			break // a line still being written
		}
		line := b[s.off : s.off+i]
		s.off += i + 1
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(line, &env) != nil || len(env.Payload) == 0 {
			continue
		}
		raw := []byte(env.Payload)
		var str string
		if json.Unmarshal(raw, &str) == nil {
			raw = []byte(str)
		}
		var objs []map[string]any
		if len(raw) > 0 && raw[0] == '[' {
			_ = json.Unmarshal(raw, &objs)
		} else {
			var o map[string]any
			if json.Unmarshal(raw, &o) == nil {
				objs = append(objs, o)
			}
		}
		for _, o := range objs {
			if m, ok := o["msg"].(string); ok && o["_peer"] != nil {
				s.counts[m]++
			}
		}
	}
	return s.counts
}

func waitSyslog(t *testing.T, tally *syslogTally, want []string, d time.Duration) map[string]int {
	t.Helper()
	var got map[string]int
	eventually(t, d, fmt.Sprintf("%d syslog messages delivered", len(want)), func() bool {
		got = tally.update(t)
		for _, w := range want {
			if got[w] == 0 {
				return false
			}
		}
		return true
	})
	return got
}

func syslogLoggerPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("logger")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("logger (util-linux) is required under CI: %v", err)
		}
		t.Skipf("SKIP: logger (util-linux) not installed: the syslog e2e test did not run")
	}
	return p
}

// A file input and two syslog inputs (TCP and UDP) in one agent: util-linux
// logger's messages arrive at the engine with their fields, the file's
// lines too, status shows the listeners' counters, and config check warns
// about a listener other hosts can reach without TLS.
//
// Then kill -9 while a TCP sender streams: every message the WAL held at
// the kill (read with db wal-show while the agent is down) is delivered
// after the restart. What a crash loses is what was read but not yet in
// the WAL, and the socket buffers: syslog has no acknowledgements, so the
// sender does not resend it; the test reports that count rather than
// requiring 0. Over UDP the same holds, and a full queue drops (counted).
func TestSyslogInputs(t *testing.T) {
	skipShort(t)
	logger := syslogLoggerPath(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true})
	tcpPort, udpPort := syslogFreePort(t, "tcp"), syslogFreePort(t, "udp")
	root.opts.inputs = fmt.Sprintf(`inputs:
  - id: app
    paths: [%q]
    read-from-beginning: true
    glob-scan-interval-ms: 200
  - id: sys-tcp
    type: syslog
    protocol: tcp
    listen: 127.0.0.1:%d
  - id: sys-udp
    type: syslog
    protocol: udp
    listen: 127.0.0.1:%d
    payload: parsed
`, root.path("in/app.log"), tcpPort, udpPort)
	root.writeConfig()
	fileLines := makeLines(t.Name()+"-file", 0, 100)
	root.createFile("in/app.log").lines(fileLines)
	agent := root.startReady()

	send := func(args []string, msgs []string) {
		t.Helper()
		cmd := exec.Command(logger, append([]string{"--server", "127.0.0.1", "-t", "gw-app", "-p", "daemon.err"}, args...)...)
		cmd.Stdin = strings.NewReader(strings.Join(msgs, "\n") + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("logger %v: %v: %s", args, err, out)
		}
	}
	tcpWant := makeLines("tcp-5424", 0, 2000)
	send([]string{"--port", strconv.Itoa(tcpPort), "--tcp", "--rfc5424", "--octet-count"}, tcpWant)
	bsdWant := makeLines("tcp-3164", 0, 300)
	send([]string{"--port", strconv.Itoa(tcpPort), "--tcp", "--rfc3164"}, bsdWant)
	// UDP on loopback with an idle agent: the kernel and the queue have
	// room, so all arrive; under load UDP may lose (counted when the
	// queue drops, uncounted when the socket buffer overflows).
	udpWant := makeLines("udp-5424", 0, 300)
	send([]string{"--port", strconv.Itoa(udpPort), "--udp", "--rfc5424"}, udpWant)

	want := append(append(append([]string{}, tcpWant...), bsdWant...), udpWant...)
	tally := newSyslogTally(rc)
	got := waitSyslog(t, tally, want, deliverTimeout)
	for _, w := range want {
		if got[w] != 1 {
			t.Fatalf("%q delivered %d times", w, got[w])
		}
	}
	if d := rc.waitDelivered(fileLines, deliverTimeout); len(d.missing) != 0 {
		t.Fatalf("file lines: %s", d)
	}
	var sample map[string]any
	for _, g := range receivedGroups(t, rc.out) {
		if m, _ := g[0]["msg"].(string); m == tcpWant[0] {
			sample = g[0]
		}
	}
	if sample["app_name"] != "gw-app" || sample["facility_name"] != "daemon" || sample["severity_name"] != "err" ||
		sample["format"] != "rfc5424" || sample["payload"] == nil {
		t.Fatalf("event fields: %v", sample)
	}

	out, _, code := root.cli("status")
	if code != 0 || !regexp.MustCompile(`input sys-tcp \(syslog\):\s+\d+ connections open \(2 accepted, 0 refused\), 2300 messages`).MatchString(out) ||
		!strings.Contains(out, "input sys-udp (syslog):") {
		t.Fatalf("status (exit %d):\n%s", code, out)
	}
	_, metrics := httpGet(t, root.apiBase()+"/metrics")
	if !strings.Contains(metrics, `edge_agent_input_dropped_total{input="sys-udp",reason="queue_full"} 0`) {
		t.Fatalf("/metrics lacks the udp input's drop counter:\n%s", syslogGrepLines(metrics, "edge_agent_input"))
	}

	// A reload that changes the TCP listener drains it and binds the
	// same address again: what it read is kept, new messages arrive.
	root.opts.inputs = strings.Replace(root.opts.inputs, "    protocol: tcp\n", "    protocol: tcp\n    max-connections: 100\n", 1)
	root.writeConfig()
	agent.signal(t, syscall.SIGHUP)
	eventually(t, 10*time.Second, "the reload applied", func() bool {
		return strings.Contains(root.logText(), `"msg":"config reloaded"`)
	})
	reloadWant := makeLines("tcp-after-reload", 0, 200)
	send([]string{"--port", strconv.Itoa(tcpPort), "--tcp", "--rfc5424", "--octet-count"}, reloadWant)
	waitSyslog(t, tally, reloadWant, deliverTimeout)

	// kill -9 while a TCP sender streams.
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(tcpPort))
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan int, 1)
	go func() {
		// A steady sender (about 20,000 messages/s), until the kill
		// breaks its connection; bounded in count and time.
		i := 0
		end := time.Now().Add(2 * time.Minute)
		for ; i < 1_000_000 && time.Now().Before(end); i++ {
			m := fmt.Sprintf("<14>1 - host kill - - - kill-%06d", i)
			if _, err := fmt.Fprintf(conn, "%d %s", len(m), m); err != nil {
				break
			}
			if i%100 == 99 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		sent <- i
	}()
	eventually(t, deliverTimeout, "some streamed messages delivered", func() bool {
		n := 0
		for m := range tally.update(t) {
			if strings.HasPrefix(m, "kill-") {
				n++
			}
		}
		return n >= 2000
	})
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	_ = conn.Close()
	nSent := <-sent

	inWAL := walSyslogMsgs(t, root, "sys-tcp", regexp.MustCompile(`kill-\d{6}`))
	if len(inWAL) == 0 {
		t.Fatal("no streamed message in the WAL after the kill")
	}
	restarted := root.startReady()
	waitSyslog(t, tally, slices.Collect(maps.Keys(inWAL)), deliverTimeout)
	got = tally.update(t)
	delivered := 0
	for i := range nSent {
		if got[fmt.Sprintf("kill-%06d", i)] > 0 {
			delivered++
		}
	}
	if delivered == nSent {
		t.Fatalf("all %d streamed messages delivered: the kill did not come mid-stream", nSent)
	}
	t.Logf("kill -9: sender wrote %d messages, %d were in the WAL, %d delivered; %d lost (read or in socket buffers, not yet in the WAL: syslog cannot resend)",
		nSent, len(inWAL), delivered, nSent-delivered)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}

	// A listener other hosts can reach without TLS is warned about.
	root.opts.inputs = "inputs:\n  - id: open\n    type: syslog\n    listen: 0.0.0.0:5514\n"
	root.writeConfig()
	out, errOut, code := root.cli("config", "check", root.configPath())
	if code != 0 || !strings.Contains(out+errOut, `inputs[0].listen: "0.0.0.0:5514" is reachable from other hosts over tcp without TLS`) {
		t.Fatalf("config check (exit %d): %s%s", code, out, errOut)
	}
}

// walSyslogMsgs reads every row of a stopped agent's WAL (db wal-list,
// then wal-show) of the input sourceID ("": every input) and returns the
// messages matching re.
func walSyslogMsgs(t *testing.T, root *agentRoot, sourceID string, re *regexp.Regexp) map[string]bool {
	t.Helper()
	list, errOut, code := root.cli("db", "wal-list", "--limit", "0")
	if code != 0 {
		t.Fatalf("db wal-list (exit %d): %s", code, errOut)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if _, err := strconv.ParseUint(f[0], 10, 64); err != nil {
			continue // the header
		}
		if sourceID != "" && (len(f) < 5 || f[4] != sourceID) {
			continue
		}
		row, errOut, code := root.cli("db", "wal-show", "--id", f[0])
		if code != 0 {
			t.Fatalf("db wal-show --id %s (exit %d): %s", f[0], code, errOut)
		}
		for _, m := range re.FindAllString(row, -1) {
			out[m] = true
		}
	}
	return out
}

func syslogGrepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
