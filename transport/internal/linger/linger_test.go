package linger

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// A reply written before Close reaches a peer that is still sending:
// the peer reads it whole, then EOF, never a reset.
func TestCloseKeepsWrittenReplies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("BYE\n"))
		Close(c)
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// Unread input on the server's side: without lingering, its close
	// would reset the connection.
	if _, err := c.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil || line != "BYE\n" {
		t.Fatalf("read %q, %v; want the reply written before Close", line, err)
	}
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("read past the reply, want EOF")
	}
	<-done
}
