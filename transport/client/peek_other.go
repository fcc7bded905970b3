//go:build !unix

package client

import "net"

// peekIdle is not available here; check falls back to a short read.
func peekIdle(net.Conn) idleState { return idleUnknown }
