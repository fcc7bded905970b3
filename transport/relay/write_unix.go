//go:build unix

package relay

import "syscall"

// canWriteRaw: a connection's socket can be written without blocking
// through its syscall.RawConn.
const canWriteRaw = true

// writeNow writes as much of b as the socket takes at once and returns
// how much; it never waits for the socket to drain (k < len(b) with a
// nil error means it would have).
func writeNow(raw syscall.RawConn, b []byte) (int, error) {
	k := 0
	var werr error
	err := raw.Write(func(fd uintptr) bool {
		for range len(b) + 1 { // bounded: each round writes a byte or stops
			if k == len(b) {
				return true
			}
			n, e := syscall.Write(int(fd), b[k:])
			if n > 0 {
				k += n
			}
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				return true
			case e != nil:
				werr = e
				return true
			case n <= 0:
				return true
			}
		}
		return true
	})
	if err != nil {
		return k, err
	}
	return k, werr
}
