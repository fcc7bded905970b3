package connset_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/internal/connset"
)

func listenLoopback() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// start serves each connection with session, and returns the set and its
// address.
func start(t *testing.T, session func(set *connset.Set, c net.Conn)) (*connset.Set, string) {
	t.Helper()
	set := connset.New(slog.New(slog.DiscardHandler), "test server")
	ln, err := set.Start(listenLoopback, func(c net.Conn) {
		set.Go(func() {
			defer set.Untrack(c)
			session(set, c)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return set, ln.Addr().String()
}

func TestStartTwiceAndAfterCloseAreRefused(t *testing.T) {
	set, addr := start(t, func(*connset.Set, net.Conn) {})
	if set.Addr() != addr {
		t.Fatalf("Addr %q, want %q", set.Addr(), addr)
	}
	if _, err := set.Start(listenLoopback, func(net.Conn) {}); !errors.Is(err, connset.ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
	if err := set.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := set.Close(time.Second); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	fresh := connset.New(slog.New(slog.DiscardHandler), "test server")
	_ = fresh.Close(time.Second)
	if _, err := fresh.Start(listenLoopback, func(net.Conn) {}); !errors.Is(err, connset.ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
	if fresh.Addr() != "" {
		t.Fatalf("Addr of a set never started: %q", fresh.Addr())
	}
}

// A session blocked reading is woken by Close, finishes (here: writes
// its goodbye, which the peer receives) and Close waits for it.
func TestCloseWakesBlockedReadsAndWaits(t *testing.T) {
	ended := make(chan struct{})
	reading := make(chan struct{})
	set, addr := start(t, func(set *connset.Set, c net.Conn) {
		defer close(ended)
		set.SetReadDeadline(c, time.Time{})
		close(reading)
		_, err := c.Read(make([]byte, 1))
		if err == nil || !set.Closing() {
			t.Errorf("read ended with %v, closing %v: want a deadline error after Close", err, set.Closing())
		}
		_, _ = io.WriteString(c, "bye\n")
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-reading
	if err := set.Close(time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Close returned before the session ended")
	}
	got, _ := io.ReadAll(c)
	if string(got) != "bye\n" {
		t.Fatalf("peer got %q, want the session's goodbye", got)
	}
	// After Close, a deadline set by a session stays in the past.
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("still accepting after Close")
	}
}

// A session stuck writing to a peer that never reads is cut once the
// grace period is over, and Close still returns.
func TestCloseCutsWritersToPeersThatDoNotRead(t *testing.T) {
	writing := make(chan struct{})
	set, addr := start(t, func(_ *connset.Set, c net.Conn) {
		close(writing)
		buf := make([]byte, 64<<10)
		for range 1 << 14 { // 1 GiB at most: far beyond any socket buffer
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
		t.Error("wrote 1 GiB to a peer that never reads")
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-writing
	if err := set.Close(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// CloseConns cuts the connections and keeps accepting.
func TestCloseConnsKeepsListening(t *testing.T) {
	set, addr := start(t, func(_ *connset.Set, c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	defer set.Close(time.Second)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// Bounded: the connection is tracked once admitted, which follows the
	// dial by an accept; CloseConns until the peer sees EOF.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	done := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); done <- err }()
	for i := 0; ; i++ {
		set.CloseConns()
		select {
		case err := <-done:
			var ne net.Error
			if err == nil || errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("peer read %v, want the connection closed by CloseConns", err)
			}
			c2, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("not accepting after CloseConns: %v", err)
			}
			_ = c2.Close()
			return
		case <-time.After(10 * time.Millisecond):
			if i > 3000 {
				t.Fatal("CloseConns never reached the connection")
			}
		}
	}
}
