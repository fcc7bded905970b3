package syslog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
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
