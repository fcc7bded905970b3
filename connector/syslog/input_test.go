package syslog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/edge-agent/edge-agent/connector/syslog/message"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// openInput starts an input on a loopback port the kernel picks.
func openInput(t *testing.T, mut func(*Config)) *Input {
	t.Helper()
	c := NewDefaultConfig()
	c.Listen = "127.0.0.1:0"
	if mut != nil {
		mut(c)
	}
	in, err := New(c, input.Settings{ID: "sys"})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(context.Background(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

func port(in *Input) string {
	_, p, _ := net.SplitHostPort(in.Addr().String())
	return p
}

// collect polls until n events arrived or d passed, as the scheduler does
// (woken by the input, or every 50 ms).
func collect(t *testing.T, in *Input, n int, d time.Duration) []map[string]any {
	t.Helper()
	var out []map[string]any
	deadline := time.Now().Add(d)
	for len(out) < n && time.Now().Before(deadline) {
		evs, err := in.Poll(context.Background(), nil, 512)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			var m map[string]any
			if err := json.Unmarshal(ev.Payload, &m); err != nil {
				t.Fatalf("event is not JSON: %v: %q", err, ev.Payload)
			}
			out = append(out, m)
		}
		if len(evs) == 0 {
			select {
			case <-in.Wakeup():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return out
}

func msgs(evs []map[string]any) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i], _ = e["msg"].(string)
	}
	return out
}

func lines(tag string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s message %05d", tag, i)
	}
	return out
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI (Debian: util-linux / rsyslog): %v", name, err)
		}
		t.Skipf("SKIP: %s not installed (Debian: util-linux / rsyslog); this real-sender test did not run", name)
	}
	return p
}

// util-linux logger, each transport and format it speaks, one message per
// stdin line: every message arrives once, in order, with its fields.
func TestLoggerSenders(t *testing.T) {
	logger := needTool(t, "logger")
	for _, tc := range []struct {
		name, proto string
		args        []string
		format      string
	}{
		{"tcp rfc5424 octet-count", ProtoTCP, []string{"--tcp", "--rfc5424", "--octet-count", "--msgid", "M1", "--sd-id", "meta@32473", "--sd-param", `k="v"`}, message.FormatRFC5424},
		{"tcp rfc5424 LF", ProtoTCP, []string{"--tcp", "--rfc5424"}, message.FormatRFC5424},
		{"tcp rfc3164", ProtoTCP, []string{"--tcp", "--rfc3164"}, message.FormatRFC3164},
		{"udp rfc5424", ProtoUDP, []string{"--udp", "--rfc5424"}, message.FormatRFC5424},
		{"udp rfc3164", ProtoUDP, []string{"--udp", "--rfc3164"}, message.FormatRFC3164},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := openInput(t, func(c *Config) { c.Protocol = tc.proto })
			want := lines(strings.ReplaceAll(tc.name, " ", "-"), 200)
			args := append([]string{"--server", "127.0.0.1", "--port", port(in), "-t", "edgeapp", "-p", "local3.warning"}, tc.args...)
			cmd := exec.Command(logger, args...)
			cmd.Stdin = strings.NewReader(strings.Join(want, "\n") + "\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("logger: %v: %s", err, out)
			}
			evs := collect(t, in, len(want), 10*time.Second)
			if got := msgs(evs); !slices.Equal(got, want) {
				t.Fatalf("got %d messages (first %.60q), want %d in order", len(got), got[:min(3, len(got))], len(want))
			}
			e := evs[0]
			if e["format"] != tc.format || e["facility_name"] != "local3" || e["severity"] != float64(4) ||
				e["app_name"] != "edgeapp" || e["payload"] == nil || !strings.HasPrefix(e["_peer"].(string), "127.0.0.1:") {
				t.Fatalf("fields: %v", e)
			}
			if tc.format == message.FormatRFC5424 && e["hostname"] == nil {
				t.Fatalf("no hostname: %v", e)
			}
			if strings.Contains(tc.name, "octet") {
				sd, _ := json.Marshal(e["structured_data"])
				if e["msgid"] != "M1" || !strings.Contains(string(sd), `"meta@32473":{"k":"v"}`) {
					t.Fatalf("msgid/structured data: %v", e)
				}
			}
			st := in.Stats()
			if st.LinesRead != int64(len(want)) || st.Events != int64(len(want)) || st.ParseErrors != 0 || st.BytesRead == 0 {
				t.Fatalf("stats %+v", st)
			}
			if tc.proto == ProtoTCP && st.ConnectionsTotal != 1 {
				t.Fatalf("connections %d, want 1", st.ConnectionsTotal)
			}
		})
	}
}

// rsyslog, the daemon most relays run, forwarding a file it tails over
// TCP with octet counting: every line arrives as an RFC 5424 message.
func TestRsyslogForwarding(t *testing.T) {
	rsyslogd := needTool(t, "rsyslogd")
	in := openInput(t, nil)
	dir := t.TempDir()
	src := dir + "/app.log"
	want := lines("rsyslog", 500)
	if err := os.WriteFile(src, []byte(strings.Join(want, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir+"/work", 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`global(workDirectory=%q)
module(load="imfile" mode="polling" PollingInterval="1")
input(type="imfile" File=%q Tag="plc-gw" Facility="local0" Severity="info")
action(type="omfwd" target="127.0.0.1" port=%q protocol="tcp" TCP_Framing="octet-counted" template="RSYSLOG_SyslogProtocol23Format")
`, dir+"/work", src, port(in))
	if err := os.WriteFile(dir+"/rsyslog.conf", []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rsyslogd, "-n", "-f", dir+"/rsyslog.conf", "-i", dir+"/rsyslogd.pid")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // by PID: the one this test started
		_ = cmd.Wait()
	})
	evs := collect(t, in, len(want), 30*time.Second)
	if got := msgs(evs); !slices.Equal(got, want) {
		t.Fatalf("got %d messages, want %d in order; rsyslogd said: %s", len(got), len(want), out.String())
	}
	if e := evs[0]; e["format"] != message.FormatRFC5424 || e["app_name"] != "plc-gw" || e["facility_name"] != "local0" || e["severity_name"] != "info" {
		t.Fatalf("fields: %v", e)
	}
}

// A TCP sender meets backpressure: with the queue full and nobody
// polling, its writes block (a write deadline expires); once the queue is
// drained every message arrives, in order, none lost.
func TestTCPBackpressure(t *testing.T) {
	in := openInput(t, func(c *Config) { c.MaxMessageBytes = 1024; c.QueueBytes = 64 << 10 })
	conn, err := net.Dial("tcp", in.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 12000 // ~11 MB: more than loopback socket buffers hold
	var stream []byte
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("bp %06d %s", i, strings.Repeat("x", 900))
		stream = fmt.Appendf(stream, "<14>1 - h app - - - %s\n", want[i])
	}
	written, blocked := 0, false
	for written < len(stream) && !blocked {
		_ = conn.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		k, err := conn.Write(stream[written:])
		written += k
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			blocked = true
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if !blocked {
		t.Fatalf("all %d bytes written with nobody polling: no backpressure", len(stream))
	}
	st := in.Stats()
	if st.LinesRead >= n || st.DroppedQueueFull != 0 {
		t.Fatalf("while blocked: %+v", st)
	}
	t.Logf("sender blocked after %d of %d bytes, %d messages read", written, len(stream), st.LinesRead)
	done := make(chan error, 1)
	go func() {
		_ = conn.SetWriteDeadline(time.Time{})
		_, err := conn.Write(stream[written:])
		done <- err
	}()
	evs := collect(t, in, n, 60*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := msgs(evs); !slices.Equal(got, want) {
		t.Fatalf("got %d messages, want %d in order", len(got), n)
	}
}

// UDP never waits: with the queue full, datagrams are dropped and
// counted; what was read is what was delivered plus what was dropped.
func TestUDPDropsWhenFull(t *testing.T) {
	in := openInput(t, func(c *Config) { c.Protocol = ProtoUDP; c.MaxMessageBytes = 1024; c.QueueBytes = 2048 })
	conn, err := net.Dial("udp", in.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 300
	for i := range n {
		if _, err := fmt.Fprintf(conn, "<14>1 - h app - - - udp %d", i); err != nil {
			t.Fatal(err)
		}
	}
	var st input.Stats
	deadline := time.Now().Add(10 * time.Second)
	for st = in.Stats(); st.LinesRead < n && time.Now().Before(deadline); st = in.Stats() {
		select {
		case <-in.Wakeup(): // only a hint here: the test reads Stats
		case <-time.After(20 * time.Millisecond):
		}
	}
	if st.DroppedQueueFull == 0 {
		t.Fatalf("nothing dropped with a 2 KiB queue and %d datagrams: %+v", n, st)
	}
	evs := collect(t, in, int(st.LinesRead-st.DroppedQueueFull), 5*time.Second)
	st = in.Stats()
	if int64(len(evs)) != st.LinesRead-st.DroppedQueueFull {
		t.Fatalf("delivered %d, read %d, dropped %d", len(evs), st.LinesRead, st.DroppedQueueFull)
	}
	t.Logf("%d datagrams read (kernel kept %d of %d), %d delivered, %d dropped (queue full)", st.LinesRead, st.LinesRead, n, len(evs), st.DroppedQueueFull)
}

// Hostile streams: an octet count over the limit closes that connection
// (others go on); a client that says nothing is closed after
// first-byte-timeout-ms; one over max-connections when every open one
// has sent data is refused; a long LF line is cut and counted; a datagram
// over the limit is cut.
func TestHostileClients(t *testing.T) {
	in := openInput(t, func(c *Config) {
		c.MaxMessageBytes = 512
		c.MaxConnections = 2
		c.MaxConnectionsPerSource = 2
	})
	idle := openInput(t, func(c *Config) { c.FirstByteTimeout = 300 * time.Millisecond })
	dialTo := func(in *Input) net.Conn {
		c, err := net.Dial("tcp", in.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	dial := func() net.Conn { return dialTo(in) }
	// Octet count larger than the limit: the connection is closed.
	big := dial()
	fmt.Fprintf(big, "5 <13>a999999 <13>never")
	if err := readUntilClosed(big, 5*time.Second); err != nil {
		t.Fatalf("oversized octet count: %v", err)
	}
	// Silent client: closed by idle-timeout.
	silent := dialTo(idle)
	if err := readUntilClosed(silent, 5*time.Second); err != nil {
		t.Fatalf("silent client: %v", err)
	}
	if st := idle.Stats(); st.ConnectionsTotal != 1 || st.Connections != 0 || st.Errors != 0 || st.ConnectionsTimedOut != 1 {
		t.Fatalf("idle input stats %+v", st)
	}
	// LF line of 1 MiB over a 512 B limit: cut, then the next one reads.
	long := dial()
	fmt.Fprintf(long, "<13>1 - h a - - - %s\n<13>1 - h a - - - after\n", strings.Repeat("z", 1<<20))
	evs := collect(t, in, 3, 10*time.Second)
	if len(evs) != 3 || evs[0]["payload"] != "<13>a" || len(evs[1]["payload"].(string)) != 512 || evs[2]["msg"] != "after" {
		t.Fatalf("long line: %d events", len(evs))
	}
	// Two connections open that sent data (long and one more): the
	// third is refused.
	second := dial()
	fmt.Fprintf(second, "<13>1 - h a - - - second\n")
	if evs := collect(t, in, 1, 5*time.Second); len(evs) != 1 {
		t.Fatalf("second connection: %d events", len(evs))
	}
	third := dial()
	if err := readUntilClosed(third, 5*time.Second); err != nil {
		t.Fatalf("over max-connections: %v", err)
	}
	st := in.Stats()
	if st.TruncatedLines != 1 || st.ConnectionsRefused != 1 || st.Errors != 1 || st.ConnectionsTotal != 3 || st.ConnectionsEvicted != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A datagram over the limit: cut to it, counted.
	udp := openInput(t, func(c *Config) { c.Protocol = ProtoUDP; c.MaxMessageBytes = 512 })
	uc, err := net.Dial("udp", udp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	fmt.Fprintf(uc, "<13>1 - h a - - - %s", strings.Repeat("u", 4000))
	if evs := collect(t, udp, 1, 5*time.Second); len(evs) != 1 || len(evs[0]["payload"].(string)) != 512 || udp.Stats().TruncatedLines != 1 {
		t.Fatalf("oversized datagram: %d events, stats %+v", len(evs), udp.Stats())
	}
}

// readUntilClosed reads until the server closes c (EOF or reset).
func readUntilClosed(c net.Conn, d time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64)
	for {
		_, err := c.Read(buf)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return fmt.Errorf("still open after %s", d)
		case err != nil:
			return nil
		}
	}
}

// Drain at a stop hands over what was read, even messages whose reader
// was waiting for room.
func TestDrainKeepsWhatWasRead(t *testing.T) {
	in := openInput(t, func(c *Config) { c.MaxMessageBytes = 512; c.QueueBytes = 512 })
	c, err := net.Dial("tcp", in.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 5 {
		fmt.Fprintf(c, "<13>1 - h a - - - d%d\n", i)
	}
	transporttest.Eventually(t, 5*time.Second, "in.Stats().LinesRead >= 2", func() bool { return in.Stats().LinesRead >= 2 }) // one queued, one waiting
	evs := in.Drain(nil)
	st := in.Stats()
	if int64(len(evs)) != st.LinesRead || st.Events != st.LinesRead {
		t.Fatalf("drained %d of %d read", len(evs), st.LinesRead)
	}
}

// A reload drains the inputs it rebuilds, then opens their successors:
// the drained listener frees its address for the new one. When the reload
// fails, the drained input is kept and polled again: it listens again.
func TestDrainThenListenAgain(t *testing.T) {
	for _, proto := range []string{ProtoTCP, ProtoUDP} {
		t.Run(proto, func(t *testing.T) {
			old := openInput(t, func(c *Config) { c.Protocol = proto })
			addr := old.Addr().String()
			send := func(text string) {
				c, err := net.Dial(proto, addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				fmt.Fprintf(c, "<13>1 - h a - - - %s\n", text)
			}
			send("before")
			transporttest.Eventually(t, 5*time.Second, "old.Stats().LinesRead == 1", func() bool { return old.Stats().LinesRead == 1 })
			if evs := old.Drain(nil); len(evs) != 1 {
				t.Fatalf("drained %d events, want 1", len(evs))
			}
			// The successor binds the same address.
			c := NewDefaultConfig()
			c.Protocol, c.Listen = proto, addr
			next, err := New(c, input.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if err := next.Open(context.Background(), input.OpenOptions{}); err != nil {
				t.Fatalf("successor cannot bind %s after Drain: %v", addr, err)
			}
			send("to the successor")
			if evs := collect(t, next, 1, 5*time.Second); len(evs) != 1 || evs[0]["msg"] != "to the successor" {
				t.Fatalf("successor got %v", msgs(evs))
			}
			_ = next.Close()
			// The reload "failed": the drained input is polled again.
			if evs, err := old.Poll(context.Background(), nil, 10); err != nil || len(evs) != 0 {
				t.Fatalf("first poll after drain: %d events, %v", len(evs), err)
			}
			if old.Addr().String() != addr {
				t.Fatalf("listening again on %s, want %s", old.Addr(), addr)
			}
			send("after")
			if evs := collect(t, old, 1, 5*time.Second); len(evs) != 1 || evs[0]["msg"] != "after" {
				t.Fatalf("after listening again: %v", msgs(evs))
			}
		})
	}
}
