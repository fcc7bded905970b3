package syslog

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// pipeListener hands out in-memory connections (net.Pipe) whose remote
// address the test chooses, so tests run in a synctest bubble: every wait
// is on a channel or a fake-clock timer, never on the network.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	port  int
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5514} }

// dial connects from ip and returns the client's end once accepted.
func (l *pipeListener) dial(t *testing.T, ip string) net.Conn {
	t.Helper()
	client, server := net.Pipe()
	l.port++
	l.conns <- &remoteConn{Conn: server, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000 + l.port}}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

type remoteConn struct {
	net.Conn
	remote net.Addr
}

func (c *remoteConn) RemoteAddr() net.Addr { return c.remote }

// isOpen reports whether the server still holds c open; call it after
// synctest.Wait.
func isOpen(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now())
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// send writes one LF-framed message from the client's end (net.Pipe
// waits for the reader).
func send(t *testing.T, c net.Conn, text string) {
	t.Helper()
	_ = c.SetWriteDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "<13>1 - h app - - - %s\n", text); err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
}

// logBuf collects log lines, safe for concurrent use.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) lines(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return out
}

// bubbleInput builds an input serving a pipeListener; call it inside the
// bubble. It is closed when the test ends.
func bubbleInput(t *testing.T, mut func(*Config)) (*Input, *pipeListener, *logBuf) {
	t.Helper()
	c := NewDefaultConfig()
	if mut != nil {
		mut(c)
	}
	logs := &logBuf{}
	in, err := New(c, input.Settings{ID: "sys", Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ln := newPipeListener()
	in.serveListener(ln)
	t.Cleanup(func() { _ = in.Close() })
	return in, ln, logs
}

// pollMsgs takes what is queued and returns the "msg" of each event.
func pollMsgs(t *testing.T, in *Input) []string {
	t.Helper()
	evs, err := in.Poll(context.Background(), nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		var m struct{ Msg string }
		if err := json.Unmarshal(ev.Payload, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Msg)
	}
	return out
}

// When max-connections are open, a new connection evicts the oldest one
// that has sent nothing; one that has sent data is never evicted; with
// every open connection having sent data, the newcomer is refused.
func TestBudgetEvictsOldestSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, ln, _ := bubbleInput(t, func(c *Config) { c.MaxConnections = 4; c.MaxConnectionsPerSource = 4 })
		talker := ln.dial(t, "10.0.0.1")
		send(t, talker, "first")
		silent := []net.Conn{ln.dial(t, "10.0.0.2"), ln.dial(t, "10.0.0.3"), ln.dial(t, "10.0.0.4")}
		synctest.Wait()
		if st := in.Stats(); st.Connections != 4 || st.ConnectionsEvicted != 0 {
			t.Fatalf("before the newcomers: %+v", st)
		}
		late := []net.Conn{ln.dial(t, "10.0.0.5"), ln.dial(t, "10.0.0.6")}
		synctest.Wait()
		for i, want := range []bool{false, false, true} {
			if isOpen(silent[i]) != want {
				t.Fatalf("silent connection %d open: %v, want %v (oldest first)", i, !want, want)
			}
		}
		if !isOpen(talker) {
			t.Fatal("the connection that had sent data was evicted")
		}
		send(t, talker, "second")
		for i, c := range append(late, silent[2]) {
			send(t, c, fmt.Sprintf("late %d", i))
		}
		synctest.Wait()
		refused := ln.dial(t, "10.0.0.7")
		synctest.Wait()
		if isOpen(refused) {
			t.Fatal("a connection was admitted with every open one having sent data")
		}
		st := in.Stats()
		if st.Connections != 4 || st.ConnectionsEvicted != 2 || st.ConnectionsRefused != 1 || st.ConnectionsTotal != 6 {
			t.Fatalf("stats %+v", st)
		}
		if got := pollMsgs(t, in); len(got) != 5 {
			t.Fatalf("messages %q", got)
		}
	})
}

// Over max-connections-per-source a source's own oldest silent
// connection makes room; with none, its newcomer is refused while other
// sources still get in.
func TestBudgetPerSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, ln, logs := bubbleInput(t, func(c *Config) { c.MaxConnections = 10; c.MaxConnectionsPerSource = 2 })
		a1, a2 := ln.dial(t, "10.0.0.1"), ln.dial(t, "10.0.0.1")
		b := ln.dial(t, "10.0.0.2")
		a3 := ln.dial(t, "10.0.0.1")
		synctest.Wait()
		if isOpen(a1) || !isOpen(a2) || !isOpen(a3) || !isOpen(b) {
			t.Fatal("the source's oldest silent connection was not the one evicted")
		}
		send(t, a2, "a2")
		send(t, a3, "a3")
		a4 := ln.dial(t, "10.0.0.1")
		b2 := ln.dial(t, "10.0.0.2")
		synctest.Wait()
		if isOpen(a4) || !isOpen(b2) {
			t.Fatal("per-source cap: the full source's newcomer must be refused, another source's admitted")
		}
		if st := in.Stats(); st.ConnectionsEvicted != 1 || st.ConnectionsRefused != 1 || st.Connections != 4 {
			t.Fatalf("stats %+v", st)
		}
		if n := len(logs.lines("max-connections-per-source open")); n != 1 {
			t.Fatalf("%d refusal lines", n)
		}
	})
}

// A connection has first-byte-timeout-ms to send its first byte; after
// that it is held to idle-timeout-ms between reads.
func TestFirstByteDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, ln, _ := bubbleInput(t, func(c *Config) { c.FirstByteTimeout = 2 * time.Second; c.IdleTimeout = time.Minute })
		silent := ln.dial(t, "10.0.0.1")
		talker := ln.dial(t, "10.0.0.2")
		time.Sleep(time.Second)
		send(t, talker, "hello")
		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		if !isOpen(silent) {
			t.Fatal("closed before first-byte-timeout-ms")
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if isOpen(silent) {
			t.Fatal("still open after first-byte-timeout-ms without a byte")
		}
		if !isOpen(talker) {
			t.Fatal("a connection that sent data was held to first-byte-timeout-ms")
		}
		time.Sleep(time.Minute - 2*time.Second)
		synctest.Wait()
		if !isOpen(talker) {
			t.Fatal("closed before idle-timeout-ms")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if isOpen(talker) {
			t.Fatal("still open after idle-timeout-ms")
		}
		if st := in.Stats(); st.ConnectionsTimedOut != 1 || st.Errors != 0 || st.Connections != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// With idle-timeout-ms 0 a connection that spoke is never closed for
// silence, though it had a first-byte deadline.
func TestFirstByteThenNoIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ln, _ := bubbleInput(t, func(c *Config) { c.FirstByteTimeout = time.Second; c.IdleTimeout = 0 })
		c := ln.dial(t, "10.0.0.1")
		send(t, c, "hello")
		time.Sleep(time.Hour)
		synctest.Wait()
		if !isOpen(c) {
			t.Fatal("closed for silence with idle-timeout-ms 0")
		}
	})
}

// tlsFiles writes a CA, a server certificate and two client certificates
// (one from another CA) and returns their paths.
type tlsFiles struct {
	dir                 string
	pool                *x509.CertPool
	client, otherClient tls.Certificate
}

func newTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "server", ca, caKey)
	newCert(t, dir, "client", ca, caKey)
	other, otherKey := newCert(t, dir, "otherca", nil, nil)
	newCert(t, dir, "otherclient", other, otherKey)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	load := func(name string) tls.Certificate {
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return tlsFiles{dir: dir, pool: pool, client: load("client"), otherClient: load("otherclient")}
}

func (f tlsFiles) config(mutual bool) func(*Config) {
	return func(c *Config) {
		c.Protocol = ProtoTLS
		c.TLS = TLSConfig{CertFile: filepath.Join(f.dir, "server.pem"), KeyFile: filepath.Join(f.dir, "server.key")}
		if mutual {
			c.TLS.ClientCAFile = filepath.Join(f.dir, "ca.pem")
		}
	}
}

// A TLS connection that never starts its handshake is closed at
// first-byte-timeout-ms, and is evicted like a silent TCP one: a client
// that handshakes at once gets in while they fill the budget.
func TestTLSSilentHandshake(t *testing.T) {
	f := newTLSFiles(t)
	synctest.Test(t, func(t *testing.T) {
		in, ln, _ := bubbleInput(t, func(c *Config) {
			f.config(false)(c)
			c.MaxConnections = 3
			c.MaxConnectionsPerSource = 3
			c.FirstByteTimeout = 3 * time.Second
		})
		var mute []net.Conn
		for range 3 {
			mute = append(mute, ln.dial(t, "10.0.0.9"))
		}
		raw := ln.dial(t, "10.0.0.1")
		tc := tls.Client(raw, &tls.Config{RootCAs: f.pool, ServerName: "localhost"})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(tc, "<13>1 - h app - - - over tls\n"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := pollMsgs(t, in); len(got) != 1 || got[0] != "over tls" {
			t.Fatalf("messages %q", got)
		}
		if isOpen(mute[0]) || !isOpen(mute[1]) {
			t.Fatal("the oldest silent TLS connection was not the one evicted")
		}
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()
		if isOpen(mute[1]) || isOpen(mute[2]) {
			t.Fatal("a TLS connection without a handshake outlived first-byte-timeout-ms")
		}
		if st := in.Stats(); st.ConnectionsTimedOut != 2 || st.ConnectionsEvicted != 1 || st.Errors != 0 || st.Connections != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// A TLS client that has begun its handshake is evicted only after every
// silent connection, however many newcomers arrive meanwhile.
func TestHandshakingOutlastsSilent(t *testing.T) {
	f := newTLSFiles(t)
	synctest.Test(t, func(t *testing.T) {
		in, ln, _ := bubbleInput(t, func(c *Config) {
			f.config(false)(c)
			c.MaxConnections = 4
			c.MaxConnectionsPerSource = 4
		})
		raw := ln.dial(t, "10.0.0.1")
		// The client hello, then nothing: the handshake has begun.
		hello := make(chan error, 1)
		go func() {
			tc := tls.Client(raw, &tls.Config{RootCAs: f.pool, ServerName: "localhost"})
			hello <- tc.Handshake()
		}()
		synctest.Wait()
		for range 20 {
			ln.dial(t, "10.0.0.9")
			synctest.Wait()
		}
		if err := <-hello; err != nil {
			t.Fatalf("the handshaking client was evicted: %v", err)
		}
		in.budget.mu.Lock()
		kept := in.budget.sources[netip.MustParsePrefix("10.0.0.1/32")]
		in.budget.mu.Unlock()
		if kept != 1 {
			t.Fatal("the handshaking client was evicted before the silent connections")
		}
		if st := in.Stats(); st.ConnectionsEvicted != 17 || st.Connections != 4 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// Mutual TLS: refused client certificates are counted by reason, make
// their source wait before each new handshake (doubling, bounded), are
// logged as one summary per interval naming nothing presented, and a
// handshake that succeeds forgives the source. Other sources never wait.
func TestAuthFailuresSlowedPerSource(t *testing.T) {
	f := newTLSFiles(t)
	synctest.Test(t, func(t *testing.T) {
		in, ln, logs := bubbleInput(t, func(c *Config) {
			f.config(true)(c)
			c.AuthFailureMaxDelay = time.Second
			c.LogInterval = 10 * time.Second
		})
		// handshake returns how long the server kept the client waiting
		// for its hello's answer, and whether the server accepted it.
		handshake := func(ip string, certs []tls.Certificate) (time.Duration, bool) {
			raw := ln.dial(t, ip)
			cfg := &tls.Config{RootCAs: f.pool, ServerName: "localhost"}
			if certs != nil {
				// Sent even when the server's CAs did not sign it.
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
			}
			tc := tls.Client(raw, cfg)
			start := time.Now()
			err := tc.Handshake()
			waited := time.Since(start)
			if err == nil {
				// TLS 1.3: the server judges the certificate after the
				// client's side is done; its verdict comes with a read.
				_ = tc.SetReadDeadline(time.Now().Add(time.Millisecond))
				_, err = tc.Read(make([]byte, 1))
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					err = nil
				}
			}
			_ = tc.Close()
			synctest.Wait()
			return waited, err == nil
		}
		want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second}
		for i, w := range want {
			certs := []tls.Certificate{f.otherClient}
			if i%2 == 0 {
				certs = nil
			}
			waited, ok := handshake("10.0.0.1", certs)
			if ok || waited != w {
				t.Fatalf("refusal %d: accepted %v after %v, want refused after %v", i, ok, waited, w)
			}
		}
		if waited, ok := handshake("10.0.0.2", []tls.Certificate{f.client}); !ok || waited != 0 {
			t.Fatalf("another source: accepted %v after %v", ok, waited)
		}
		// The wait runs from the last refusal; the other source's check
		// (a 1 ms read) took part of it.
		if waited, ok := handshake("10.0.0.1", []tls.Certificate{f.client}); !ok || waited != time.Second-time.Millisecond {
			t.Fatalf("the slowed source with a good certificate: accepted %v after %v", ok, waited)
		}
		if waited, ok := handshake("10.0.0.1", nil); ok || waited != 0 {
			t.Fatalf("after a success the source is forgiven: accepted %v after %v", ok, waited)
		}
		st := in.Stats()
		if st.AuthFailedNoCert != 4 || st.AuthFailedBadCert != 2 || st.Errors != 0 {
			t.Fatalf("stats %+v", st)
		}
		if n := len(logs.lines("level=WARN")); n != 0 {
			t.Fatalf("refusals logged one by one: %q", logs.lines("level=WARN"))
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		sum := logs.lines("TLS client certificates refused")
		if len(sum) != 1 || !strings.Contains(sum[0], "no_certificate=4") || !strings.Contains(sum[0], "bad_certificate=2") ||
			!strings.Contains(sum[0], "sources=1") || !strings.Contains(sum[0], "top_source=10.0.0.1/32") {
			t.Fatalf("summary %q", sum)
		}
		if strings.Contains(strings.Join(logs.lines(""), "\n"), "edge-agent test") {
			t.Fatal("a certificate's subject reached the log")
		}
	})
}

// A flood of bad framing writes one WARN line per log-interval-ms, the
// next one counting those held back.
func TestBadFramingWarnsLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, ln, logs := bubbleInput(t, func(c *Config) { c.LogInterval = 10 * time.Second; c.MaxMessageBytes = 512 })
		for range 100 {
			c := ln.dial(t, "10.0.0.1")
			if _, err := io.WriteString(c, "9999999 x"); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		if n := len(logs.lines("bad framing")); n != 1 {
			t.Fatalf("%d bad-framing lines for 100 connections, want 1", n)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		held := logs.lines("held back")
		if len(held) != 1 || !strings.Contains(held[0], "kind=bad_framing") || !strings.Contains(held[0], "suppressed=99") {
			t.Fatalf("held-back line %q", held)
		}
		c := ln.dial(t, "10.0.0.1")
		_, _ = io.WriteString(c, "9999999 x")
		synctest.Wait()
		if st := in.Stats(); st.Errors != 101 {
			t.Fatalf("stats %+v", st)
		}
		if n := len(logs.lines("bad framing")); n != 2 {
			t.Fatalf("%d bad-framing lines after the interval, want 2", n)
		}
	})
}
