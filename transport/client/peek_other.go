//go:build !unix

package client

import "net"

// peekIdle is not available here; alive falls back to a short read.
func peekIdle(net.Conn) (alive, known bool) { return false, false }
