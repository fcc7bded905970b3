package enginemodel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ioTimeout bounds each network wait of these tests; it is a safety
// net, never what a test measures.
const ioTimeout = 10 * time.Second

func startServer(t *testing.T, src *Source, cfg ServerConfig) (*Server, chan struct{}) {
	t.Helper()
	cfg.Session.Token = testToken
	srv, err := NewServer(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	relistened := make(chan struct{}, 16)
	srv.onListen = func() { relistened <- struct{}{} }
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, relistened
}

type client struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(ioTimeout))
	return &client{t: t, conn: conn, r: bufio.NewReader(conn)}
}

func (c *client) send(lines ...string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, strings.Join(lines, "\n")+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) read() (string, error) {
	return c.r.ReadString('\n')
}

func (c *client) expect(want ...string) {
	c.t.Helper()
	for _, w := range want {
		got, err := c.read()
		if err != nil || got != w+"\n" {
			c.t.Fatalf("reply %q (%v), want %q", got, err, w)
		}
	}
}

func (c *client) expectClosed() {
	c.t.Helper()
	if got, err := c.read(); err == nil {
		c.t.Fatalf("got %q, want the connection closed", got)
	}
}

// The observed session over TCP, every request pipelined in one write per phase; the
// reply stream must match byte for byte.
func TestServerGoldenTranscript(t *testing.T) {
	j := newTranscriptJob(t)
	srv, _ := startServer(t, j.Source(), ServerConfig{})
	c := dial(t, srv.Addr())
	var phase []transcriptStep
	flush := func() {
		var req, want strings.Builder
		for _, st := range phase {
			req.WriteString(st.req + "\n")
			want.WriteString(st.reply + "\n")
		}
		if _, err := io.WriteString(c.conn, req.String()); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, want.Len())
		if _, err := io.ReadFull(c.r, got); err != nil || string(got) != want.String() {
			t.Fatalf("replies\n%s(%v)\nwant\n%s", got, err, want.String())
		}
		phase = phase[:0]
	}
	for _, st := range goldenTranscript() {
		if st.advance > 0 {
			flush()
			if err := j.Advance(st.advance); err != nil {
				t.Fatal(err)
			}
		}
		phase = append(phase, st)
	}
	flush()
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// While a collector holds the source the port is closed; it opens again
// when the collector leaves.
func TestServerOneCollectorRefusesSecond(t *testing.T) {
	src := newTestSource(t, SourceConfig{})
	srv, relistened := startServer(t, src, ServerConfig{})
	a := dial(t, srv.Addr())
	a.send("__AUTH__:" + testToken)
	a.expect("ACK")
	if conn, err := net.DialTimeout("tcp", srv.Addr(), ioTimeout); err == nil || !isRefused(err) {
		if conn != nil {
			conn.Close()
		}
		t.Fatalf("second connect: %v, want refused", err)
	}
	a.send("__BATCH__:1:x")
	a.expect("RECEIVED")
	_ = a.conn.Close()
	select {
	case <-relistened:
	case <-time.After(ioTimeout):
		t.Fatal("the server did not listen again")
	}
	b := dial(t, srv.Addr())
	b.send(testToken, "__COMMIT__:1") // a bare token line authenticates
	b.expect("ACK", "PENDING")        // the state outlived the connection
}

func TestServerWrongTokenKeepsListening(t *testing.T) {
	srv, _ := startServer(t, newTestSource(t, SourceConfig{}), ServerConfig{})
	a := dial(t, srv.Addr())
	a.send("__AUTH__:nope")
	a.expect("AUTH_FAILED")
	a.expectClosed()
	b := dial(t, srv.Addr())
	b.send("__AUTH__:" + testToken)
	b.expect("ACK")
}

// No auth line within the accept timeout: AUTH_FAILED, then close.
func TestServerAuthTimeout(t *testing.T) {
	srv, _ := startServer(t, newTestSource(t, SourceConfig{}), ServerConfig{AcceptTimeout: 20 * time.Millisecond})
	a := dial(t, srv.Addr())
	a.expect("AUTH_FAILED")
	a.expectClosed()
}

// After auth the accept timeout no longer applies: an idle session stays.
func TestServerIdleSessionKept(t *testing.T) {
	srv, _ := startServer(t, newTestSource(t, SourceConfig{}), ServerConfig{AcceptTimeout: 10 * time.Millisecond})
	a := dial(t, srv.Addr())
	a.send(testToken)
	a.expect("ACK")
	// Idle for several accept timeouts. A shorter wait than intended
	// only weakens the test; it cannot make it fail.
	time.Sleep(50 * time.Millisecond)
	a.send("__COMMIT__:3")
	a.expect("RETRY")
}

// A failover kills the collector's connection with the old reader; the
// source answers from the restored state on the next one.
func TestServerFailoverDropsCollector(t *testing.T) {
	j := newTestJob(t, JobConfig{})
	srv, relistened := startServer(t, j.Source(), ServerConfig{})
	a := dial(t, srv.Addr())
	a.send(testToken, "__BATCH__:1:x", "__BATCH__:2:y")
	a.expect("ACK", "RECEIVED", "RECEIVED")
	j.Drain(1)
	j.Checkpoint()
	a.send("__BATCH__:3:z")
	a.expect("RECEIVED")
	if err := j.Failover(); err != nil {
		t.Fatal(err)
	}
	a.expectClosed()
	select {
	case <-relistened:
	case <-time.After(ioTimeout):
		t.Fatal("the server did not listen again")
	}
	b := dial(t, srv.Addr())
	b.send(testToken, "__COMMIT__:1", "__COMMIT__:2", "__COMMIT__:3")
	b.expect("ACK", "ACK:1", "PENDING", "RETRY")
}

func TestServerLineTooLong(t *testing.T) {
	srv, _ := startServer(t, newTestSource(t, SourceConfig{}), ServerConfig{MaxLineBytes: 64})
	a := dial(t, srv.Addr())
	a.send(testToken, "__BATCH__:1:"+strings.Repeat("x", 100))
	a.expect("ACK", "BAD_REQUEST")
	a.expectClosed()
}

func TestServerCloseEndsSession(t *testing.T) {
	srv, _ := startServer(t, newTestSource(t, SourceConfig{}), ServerConfig{})
	a := dial(t, srv.Addr())
	a.send(testToken)
	a.expect("ACK")
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	a.expectClosed()
	if conn, err := net.DialTimeout("tcp", srv.Addr(), ioTimeout); err == nil {
		conn.Close()
		t.Fatal("still listening after Close")
	}
}

func TestNewServerNeedsToken(t *testing.T) {
	if _, err := NewServer(newTestSource(t, SourceConfig{}), ServerConfig{}); err == nil {
		t.Fatal("no token accepted")
	}
}

// A connect that raced the first collector's auth sat in the backlog;
// closing the listener resets it, as the engine's did.
func TestServerRacingConnectIsReset(t *testing.T) {
	srv, _ := startServer(t, newTestSource(t, SourceConfig{}), ServerConfig{})
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr()) // queued while a is being served
	a.send(testToken)
	a.expect("ACK")
	// The reset shows on the write or on the read after it.
	if _, err := io.WriteString(b.conn, testToken+"\n"); err != nil {
		return
	}
	if got, err := b.read(); err == nil {
		t.Fatalf("racing collector got %q, want its connection reset", got)
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("racing collector was left waiting, not reset")
	}
}
