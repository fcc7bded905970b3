//go:build unix

package e2e

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// heldPort is a loopback port the test has bound without listening on it,
// for a server that must come up later on a port named in advance (an
// agent's config written while its engine is down). Until release, a
// connection to it is refused, as to a stopped server, and no other
// socket can take it: the socket has no SO_REUSEADDR, so every other
// bind of the port fails, and the kernel never hands it out for an
// outgoing connection.
type heldPort struct {
	port    int
	release func()
}

// holdPort binds a port the kernel picks and holds it until release or
// the end of the test.
func holdPort(t *testing.T) *heldPort {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		t.Fatalf("bind 127.0.0.1:0: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		_ = syscall.Close(fd)
		t.Fatalf("getsockname: %v", err)
	}
	h := &heldPort{port: sa.(*syscall.SockaddrInet4).Port}
	h.release = sync.OnceFunc(func() { _ = syscall.Close(fd) })
	t.Cleanup(h.release)
	return h
}

// deadPort is a port no engine ever listens on during the test: the
// agent's connections to it are refused, and no other test's receiver
// can answer on it.
func deadPort(t *testing.T) int {
	t.Helper()
	return holdPort(t).port
}

// A held port refuses connections and every other bind until it is
// released; then a server can listen on it.
func TestHeldPort(t *testing.T) {
	h := holdPort(t)
	addr := "127.0.0.1:" + strconv.Itoa(h.port)
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Fatalf("a connection to the held port %s was accepted", addr)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial the held port: %v, want connection refused", err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener bound the held port %s", addr)
	}
	h.release()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on the released port: %v", err)
	}
	ln.Close()
}
