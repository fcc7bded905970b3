package output

import (
	"errors"

	"github.com/edge-agent/edge-agent/transport"
)

// ConnectionState names what a failed send or probe found: "auth_failed",
// "decrypt_failed", "rejected", or "unavailable" for anything else. The
// agent's connection and each endpoint of output.endpoints report it; a
// health check tells refusals apart by this alone.
func ConnectionState(err error) string {
	switch {
	case errors.Is(err, transport.ErrAuthFailed):
		return "auth_failed"
	case errors.Is(err, transport.ErrDecryptFailed):
		return "decrypt_failed"
	case errors.Is(err, transport.ErrRejected):
		return "rejected"
	}
	return "unavailable"
}
