//go:build unix

package client

import (
	"errors"
	"net"
	"syscall"
)

// peekIdle looks at an idle socket without consuming or waiting.
// idleUnknown when conn exposes no socket.
func peekIdle(conn net.Conn) idleState {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return idleUnknown
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return idleUnknown
	}
	var (
		n    int
		perr error
	)
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait for readiness
	})
	switch {
	case err != nil:
		return idleClosed
	case errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK):
		return idleQuiet // nothing to read: the normal idle state
	case perr == nil && n > 0:
		return idleData
	}
	return idleClosed // EOF (n == 0) or a socket error
}
