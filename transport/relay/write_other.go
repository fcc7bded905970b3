//go:build !unix

package ingress

import (
	"errors"
	"syscall"
)

// canWriteRaw: off here; every connection writes from a goroutine of its
// own, blocking.
const canWriteRaw = false

func writeNow(syscall.RawConn, []byte) (int, error) {
	return 0, errors.New("ingress: non-blocking writes not supported on this platform")
}
