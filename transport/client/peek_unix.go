//go:build unix

package client

import (
	"errors"
	"net"
	"syscall"
)

// peekIdle looks at an idle socket without consuming or waiting: alive
// when nothing is readable yet. known is false when conn exposes no
// socket.
func peekIdle(conn net.Conn) (alive, known bool) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, false
	}
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait for readiness
	})
	if err != nil {
		return false, true
	}
	// EAGAIN: nothing to read, the normal idle state. Anything else is
	// EOF (the peer closed), an error, or bytes nobody asked for (a TLS
	// alert, garbage): the session is out of step either way.
	return errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK), true
}
