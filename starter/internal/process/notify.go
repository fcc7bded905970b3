package process

import (
	"fmt"
	"net"
)

// Notify sends state (for example "READY=1" or "STOPPING=1") to the systemd
// notification socket named by socket, the value of NOTIFY_SOCKET. An empty
// socket means "not under systemd Type=notify" and is not an error.
//
// The protocol is one datagram on a unix socket; writing it by hand avoids a
// dependency for four lines of code. A leading '@' names an abstract socket,
// which the Go runtime maps to the leading NUL byte the kernel expects.
func Notify(socket, state string) error {
	if socket == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	return nil
}
