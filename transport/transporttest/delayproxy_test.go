package transporttest

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestDelayProxyAddsRoundTrip checks the proxy forwards bytes both ways and
// that an echo through it takes at least the configured round trip.
func TestDelayProxyAddsRoundTrip(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			_, _ = c.Write([]byte("echo:" + line))
		}
	}()

	const rtt = 40 * time.Millisecond
	p := NewDelayProxy(t, ln.Addr().String(), rtt)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if got != "echo:ping\n" {
		t.Fatalf("got %q through the proxy", got)
	}
	if el := time.Since(start); el < rtt {
		t.Fatalf("echo took %v, less than the %v round trip the proxy must add", el, rtt)
	}
}
