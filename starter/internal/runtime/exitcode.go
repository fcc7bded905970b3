package runtime

import (
	"errors"
	"fmt"

	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
)

// Exit codes of `edge-agent start`. 3 is left to `status` (not running),
// as LSB init scripts expect.
const (
	ExitOK            = 0 // clean stop
	ExitFailure       = 1 // runtime or start-up failure
	ExitInvalid       = 2 // invalid configuration (config.ErrInvalid)
	ExitAuthFailed    = 4 // engine answered AUTH_FAILED: fix output.token
	ExitDecryptFailed = 5 // engine answered DECRYPT_FAILED: fix the AES key
	ExitLocked        = 6 // another edge-agent holds the WAL (wal.ErrLocked)
)

// ExitCode maps an error from New or Run to the documented exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, config.ErrInvalid):
		return ExitInvalid
	case errors.Is(err, transport.ErrAuthFailed):
		return ExitAuthFailed
	case errors.Is(err, transport.ErrDecryptFailed):
		return ExitDecryptFailed
	case errors.Is(err, wal.ErrLocked):
		return ExitLocked
	}
	return ExitFailure
}

func isFatal(err error) bool    { return transport.IsFatal(err) }
func isRejected(err error) bool { return errors.Is(err, transport.ErrRejected) }

// fatalError wraps a fatal transport error for Run. The sentinel's text
// already says which setting to fix.
func fatalError(err error) error {
	return fmt.Errorf("stop edge agent: %w", err)
}
