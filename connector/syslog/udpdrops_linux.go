package syslog

import (
	"encoding/binary"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// The kernel's count of datagrams it dropped for a socket (its receive
// buffer was full) comes with each datagram read, as an SO_RXQ_OVFL
// control message: exact, per socket, with no file to parse. The kernel
// stamps it on a datagram when it queues it, so drops show with the next
// datagram queued after them.

// dropsOOBLen is the control buffer a read needs for the count.
func dropsOOBLen() int { return unix.CmsgSpace(4) }

// enableDropCount asks the kernel to attach the drop count to datagrams.
func enableDropCount(pc *net.UDPConn) error {
	raw, err := pc.SyscallConn()
	if err != nil {
		return fmt.Errorf("syslog udp: SO_RXQ_OVFL: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
	}); err != nil {
		return fmt.Errorf("syslog udp: SO_RXQ_OVFL: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("syslog udp: setsockopt SO_RXQ_OVFL: %w", serr)
	}
	return nil
}

// parseDropCount finds the SO_RXQ_OVFL count in oob.
func parseDropCount(oob []byte) (uint32, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return binary.NativeEndian.Uint32(m.Data), true
		}
	}
	return 0, false
}

// receiveBuffer is the socket's receive buffer as the kernel set it
// (Linux doubles what was asked, capped by net.core.rmem_max).
func receiveBuffer(pc *net.UDPConn) (int, error) {
	raw, err := pc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("syslog udp: SO_RCVBUF: %w", err)
	}
	var n int
	var serr error
	if err := raw.Control(func(fd uintptr) { n, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) }); err != nil {
		return 0, fmt.Errorf("syslog udp: SO_RCVBUF: %w", err)
	}
	if serr != nil {
		return 0, fmt.Errorf("syslog udp: getsockopt SO_RCVBUF: %w", serr)
	}
	return n / 2, nil
}
