//go:build !unix

package relay

import (
	"errors"
	"syscall"
)

// canWriteRaw: off here; every connection writes from a goroutine of its
// own, blocking.
const canWriteRaw = false

func writeNow(syscall.RawConn, []byte) (int, error) {
	return 0, errors.New("relay: non-blocking writes not supported on this platform")
}
