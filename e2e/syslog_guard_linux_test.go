//go:build linux

package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// syslogFloodSources are the silent flood's addresses: twenty, so that
// the per-source cap does not keep it under the connection budget.
var syslogFloodSources = func() []string {
	var srcs []string
	for i := range 20 {
		srcs = append(srcs, fmt.Sprintf("127.0.0.%d", 2+i))
	}
	return srcs
}()

// metricValue is the value of one series of /metrics ("name{labels}"),
// -1 when absent.
func metricValue(t *testing.T, base, series string) float64 {
	t.Helper()
	_, body := httpGet(t, base+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

// octetFrames is n RFC 5424 messages "tag-NNNNN", octet-counted.
func octetFrames(tag string, n int) ([]byte, []string) {
	var b bytes.Buffer
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("%s-%05d", tag, i)
		m := "<14>1 - legit app - - - " + want[i]
		fmt.Fprintf(&b, "%d %s", len(m), m)
	}
	return b.Bytes(), want
}

// A legitimate sender that speaks at once delivers everything while 2,000
// silent connections from 20 other loopback addresses, redialled as the
// agent closes them, fill the listener's budget: over TCP, and over TLS
// against connections that never start a handshake. The flood is counted
// as evictions; the log does not grow with it. Then 5,000 connections
// with bad framing write a handful of WARN lines, not 5,000.
func TestSyslogSilentFlood(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true})
	dir := root.path("config")
	ca := newTestCA(t, dir, "syslog-ca")
	certFile, keyFile := ca.serverCert(t, dir, "syslog")
	tcpPort, tlsPort := syslogFreePort(t, "tcp"), syslogFreePort(t, "tcp")
	root.opts.inputs = fmt.Sprintf(`inputs:
  - id: sys-tcp
    type: syslog
    listen: 127.0.0.1:%d
  - id: sys-tls
    type: syslog
    protocol: tls
    listen: 127.0.0.1:%d
    tls: {cert-file: %q, key-file: %q}
`, tcpPort, tlsPort, certFile, keyFile)
	root.writeConfig()
	agent := root.startReady()
	base := root.apiBase()
	tally := newSyslogTally(rc)
	rssIdle, fdsIdle := procFigures(agent.pid())
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)

	for _, tc := range []struct {
		input string
		port  int
		dial  func(addr string) (net.Conn, error)
	}{
		{"sys-tcp", tcpPort, func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 10*time.Second) }},
		{"sys-tls", tlsPort, func(addr string) (net.Conn, error) {
			d := &net.Dialer{Timeout: 10 * time.Second}
			return tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		}},
	} {
		addr := "127.0.0.1:" + strconv.Itoa(tc.port)
		evicted := fmt.Sprintf(`edge_agent_input_connections_closed_total{input=%q,reason="evicted"}`, tc.input)
		cpuBefore, floodStart := procCPU(agent.pid()), time.Now()
		flood := startFlood(t, addr, syslogFloodSources, 2000, 0)
		eventually(t, 60*time.Second, tc.input+": the flood fills the budget and evicts", func() bool {
			return metricValue(t, base, fmt.Sprintf(`edge_agent_input_connections{input=%q}`, tc.input)) == 256 &&
				metricValue(t, base, evicted) > 2000
		})
		rssFlood, fdsFlood := procFigures(agent.pid())
		payload, want := octetFrames(tc.input, 10_000)
		ackedBefore := metricValue(t, base, "edge_agent_events_acked_total")
		start := time.Now()
		c, err := tc.dial(addr)
		if err != nil {
			flood.stop()
			t.Fatalf("%s: the legitimate sender could not connect during the flood: %v", tc.input, err)
		}
		connected := time.Since(start)
		if _, err := c.Write(payload); err != nil {
			flood.stop()
			t.Fatalf("%s: the legitimate sender was cut off during the flood: %v", tc.input, err)
		}
		written := time.Since(start)
		_ = c.Close()
		// Timed by the agent's own count of what the engine stand-in
		// acknowledged (cheap to poll); then every message is checked.
		eventually(t, deliverTimeout, tc.input+": the sender's messages acknowledged", func() bool {
			return metricValue(t, base, "edge_agent_events_acked_total") >= ackedBefore+float64(len(want))
		})
		took := time.Since(start)
		waitSyslog(t, tally, want, deliverTimeout)
		evictedBefore := metricValue(t, base, evicted)
		cpu, wall := procCPU(agent.pid())-cpuBefore, time.Since(floodStart)
		flood.stop()
		got := tally.update(t)
		for _, w := range want {
			if got[w] != 1 {
				t.Fatalf("%s: %q delivered %d times", tc.input, w, got[w])
			}
		}
		t.Logf("%s: 10,000 messages delivered %.2f s after connecting (connected in %.3f s, written in %.3f s), during a flood of 2,000 silent connections "+
			"(%d dials, %.0f evicted by then); agent RSS %d -> %d KiB, fds %d -> %d, CPU %.1f s in %.1f s of flood",
			tc.input, took.Seconds(), connected.Seconds(), written.Seconds(), flood.dials.Load(), evictedBefore, rssIdle, rssFlood, fdsIdle, fdsFlood,
			cpu.Seconds(), wall.Seconds())
	}
	if n := strings.Count(root.logText(), "connection budget full"); n > 20 {
		t.Fatalf("%d WARN lines about evictions: the log grows with the flood", n)
	}

	// 5,000 connections with bad framing, from 20 addresses.
	tcpAddr := "127.0.0.1:" + strconv.Itoa(tcpPort)
	before := strings.Count(root.logText(), "bad framing")
	start := time.Now()
	for i := range 5000 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%20))}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", tcpAddr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("99999999999 x"))
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Read(make([]byte, 1)) // until the agent closes it
		_ = c.Close()
	}
	took := time.Since(start)
	eventually(t, 10*time.Second, "the bad-framing errors counted", func() bool {
		return strings.Contains(root.logText(), "bad framing")
	})
	lines := strings.Count(root.logText(), "bad framing") - before
	if lines < 1 || lines > 5 {
		t.Fatalf("%d WARN lines for 5,000 bad-framing connections in %s", lines, took)
	}
	t.Logf("5,000 bad-framing connections in %.1f s: %d WARN lines", took.Seconds(), lines)
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	held := syslogGrepLines(root.logText(), "held back")
	if !strings.Contains(held, `"kind":"bad_framing"`) {
		t.Fatalf("no line counts the bad-framing lines held back:\n%s", held)
	}
}

// strict: true over UDP drops random bytes and counts them, delivering
// every well-formed message; a burst larger than the socket's receive
// buffer (receive-buffer-bytes) is dropped by the kernel, and counted.
func TestSyslogStrictUDP(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true})
	udpPort := syslogFreePort(t, "udp")
	root.opts.inputs = fmt.Sprintf(`inputs:
  - id: sys-udp
    type: syslog
    protocol: udp
    listen: 127.0.0.1:%d
    strict: true
    receive-buffer-bytes: 65536
`, udpPort)
	root.writeConfig()
	agent := root.startReady()
	base := root.apiBase()
	tally := newSyslogTally(rc)
	conn, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(udpPort))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const (
		malformed = `edge_agent_input_dropped_total{input="sys-udp",reason="malformed"}`
		kernel    = `edge_agent_input_dropped_total{input="sys-udp",reason="receive_buffer"}`
		queueFull = `edge_agent_input_dropped_total{input="sys-udp",reason="queue_full"}`
	)

	// Garbage and good messages in steps of 20 datagrams, each step
	// waiting until the agent has read the previous one: the kernel's
	// buffer never overflows here.
	rng := rand.New(rand.NewPCG(41, 6))
	buf := make([]byte, 400)
	var good []string
	garbage := 0
	for step := range 100 {
		for k := range 20 {
			if k%10 == 0 {
				m := fmt.Sprintf("good-%04d-%d", step, k)
				good = append(good, m)
				fmt.Fprintf(conn, "<13>1 - h app - - - %s", m)
				continue
			}
			for j := range buf {
				buf[j] = byte(rng.Uint32())
			}
			if _, err := conn.Write(buf[:1+rng.IntN(len(buf))]); err != nil {
				t.Fatal(err)
			}
			garbage++
		}
		eventually(t, 10*time.Second, "the step read", func() bool {
			return metricValue(t, base, malformed)+metricValue(t, base, "edge_agent_events_read_total") >= float64(garbage+len(good))
		})
	}
	waitSyslog(t, tally, good, deliverTimeout)
	got := tally.update(t)
	total := 0
	for _, n := range got {
		total += n
	}
	if total != len(good) {
		t.Fatalf("%d events delivered, want the %d good ones only", total, len(good))
	}
	if v := metricValue(t, base, malformed); v != float64(garbage) {
		t.Fatalf("malformed drops counted %v, want %d", v, garbage)
	}
	if v := metricValue(t, base, kernel); v != 0 {
		t.Fatalf("kernel drops %v in the paced part", v)
	}

	// A burst: 20,000 datagrams from four senders at once into a 64 KiB
	// buffer, then one more at a time until one arrives: it carries the
	// kernel's count.
	const burst = 20_000
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(udpPort))
			if err != nil {
				return
			}
			defer c.Close()
			for i := range burst / 4 {
				fmt.Fprintf(c, "<13>1 - h app - - - burst-%d-%05d", g, i)
			}
		}()
	}
	wg.Wait()
	var tail []string
	tailArrived := func() bool {
		got := tally.update(t)
		for _, m := range tail {
			if got[m] > 0 {
				return true
			}
		}
		return false
	}
	for i := range 100 {
		m := fmt.Sprintf("tail-%03d", i)
		tail = append(tail, m)
		fmt.Fprintf(conn, "<13>1 - h app - - - %s", m)
		if tailArrived() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, deliverTimeout, "a datagram after the burst delivered", tailArrived)
	eventually(t, deliverTimeout, "the burst's read datagrams delivered", func() bool {
		return metricValue(t, base, "edge_agent_events_acked_total") >= metricValue(t, base, "edge_agent_events_read_total")
	})
	delivered := 0
	for m, n := range tally.update(t) {
		if strings.HasPrefix(m, "burst-") || strings.HasPrefix(m, "tail-") {
			delivered += n
		}
	}
	sent := burst + len(tail)
	drops, qf := metricValue(t, base, kernel), metricValue(t, base, queueFull)
	t.Logf("a burst of %d datagrams (and %d after it) into a 64 KiB receive buffer: %d delivered, %.0f dropped by the kernel (counted), %.0f by the queue; %d unaccounted",
		burst, len(tail), delivered, drops, qf, sent-delivered-int(drops)-int(qf))
	if lost := sent - delivered - int(qf); lost > 0 && drops == 0 {
		t.Fatalf("%d datagrams lost and no kernel drop counted", lost)
	}
	if drops+qf > float64(sent-delivered) {
		t.Fatalf("more drops counted (%v kernel, %v queue) than datagrams not delivered (%d)", drops, qf, sent-delivered)
	}
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}

// clientCert issues a client certificate named name from ca.
func (ca *testCA) clientCert(t *testing.T, name string) tls.Certificate {
	t.Helper()
	return transporttest.NewCert(t, transporttest.CertOptions{Name: name, Parent: &ca.Cert}).Pair
}

// Mutual TLS: a source presenting a certificate the listener does not
// trust is slowed down (each handshake waits longer, up to
// auth-failure-max-delay-ms), every refusal is counted by reason, the log
// has summaries rather than a line per refusal and never the
// certificate's name, and a trusted client from another address still
// delivers.
func TestSyslogClientCertFailuresSlowed(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true})
	dir := root.path("config")
	ca := newTestCA(t, dir, "syslog-ca")
	rogue := newTestCA(t, dir, "rogue-ca")
	certFile, keyFile := ca.serverCert(t, dir, "syslog")
	port := syslogFreePort(t, "tcp")
	root.opts.inputs = fmt.Sprintf(`inputs:
  - id: sys-mtls
    type: syslog
    protocol: tls
    listen: 127.0.0.1:%d
    tls: {cert-file: %q, key-file: %q, client-ca-file: %q}
    auth-failure-max-delay-ms: 1000
    log-interval-ms: 2000
`, port, certFile, keyFile, ca.pem)
	root.writeConfig()
	agent := root.startReady()
	base := root.apiBase()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	attempt := func(src string, cert tls.Certificate, msg string) error {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 30 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1",
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }})
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "<13>1 - h app - - - %s\n", msg); err != nil {
			return err
		}
		// TLS 1.3: the verdict on the client certificate comes with a read.
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	}
	bad := rogue.clientCert(t, "rogue-client-name")
	const tries = 10
	start := time.Now()
	for i := range tries {
		if err := attempt("127.0.0.5", bad, fmt.Sprintf("rogue-%d", i)); err == nil {
			t.Fatalf("attempt %d with an untrusted certificate was accepted", i)
		}
	}
	took := time.Since(start)
	// The waits the agent imposes: 0, 0.25, 0.5, then 1 s each.
	if minWait := 750*time.Millisecond + (tries-3)*time.Second; took < minWait {
		t.Fatalf("%d refused handshakes took %s: the source was not slowed (at least %s)", tries, took, minWait)
	}
	if err := attempt("127.0.0.6", ca.clientCert(t, "device"), "trusted"); err != nil {
		t.Fatalf("a trusted client from another address: %v", err)
	}
	waitSyslog(t, newSyslogTally(rc), []string{"trusted"}, deliverTimeout)
	if v := metricValue(t, base, `edge_agent_input_auth_failures_total{input="sys-mtls",reason="bad_certificate"}`); v != tries {
		t.Fatalf("bad_certificate refusals counted %v, want %d", v, tries)
	}
	eventually(t, 10*time.Second, "a summary of the refusals", func() bool {
		return strings.Contains(root.logText(), "TLS client certificates refused")
	})
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	logText := root.logText()
	if n := strings.Count(logText, "TLS client certificates refused"); n < 1 || n > tries/2 {
		t.Fatalf("%d summary lines for %d refusals", n, tries)
	}
	if strings.Contains(logText, "rogue-client-name") {
		t.Fatal("the name in the refused certificate reached the log")
	}
	t.Logf("%d refused handshakes from one address took %.1f s (the agent's waits: at least %.2f s)", tries, took.Seconds(), (750*time.Millisecond + (tries-3)*time.Second).Seconds())
}
