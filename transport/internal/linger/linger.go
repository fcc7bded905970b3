// Package linger ends a server's connection without losing the replies
// it already wrote.
package linger

import (
	"io"
	"net"
	"time"
)

// Timeout bounds Close's wait for the peer to close its side.
const Timeout = 500 * time.Millisecond

// Close sends FIN and reads (discarding) until the peer closes or Timeout
// passes; the caller closes conn afterwards. Closing a socket with unread
// input makes the kernel send RST, and a RST can destroy replies still
// unread on the peer's side, turning delivered batches into duplicates.
// A connection that cannot half-close is left as it is.
func Close(conn net.Conn) {
	cw, ok := conn.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(Timeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
}
