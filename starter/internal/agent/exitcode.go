package agent

import (
	"errors"
	"fmt"

	"github.com/edge-agent/edge-agent/transport"
)

// isRefusal reports whether the engine refused a setting of ours
// (AUTH_FAILED, DECRYPT_FAILED): the rows are not at fault, and only an
// operator can end it.
func isRefusal(err error) bool  { return transport.IsFatal(err) }
func isRejected(err error) bool { return errors.Is(err, transport.ErrRejected) }

// refusalAdvice is the ERROR logged at each refused try and what to fix:
// the sentinel names one key, an operator needs every key that must match
// and how delivery resumes.
func refusalAdvice(err error) (msg, fix string) {
	if errors.Is(err, transport.ErrDecryptFailed) {
		return "engine could not decrypt the payload (DECRYPT_FAILED); input keeps being read into the WAL, sending is retried at the maximum backoff",
			"output.packet-mode, output.encryption and the key (output.aes-secret-key-base64 or aes-secret-key-file) must match the EdgeSocket source's; then run edge-agent reload (or send SIGHUP)"
	}
	return "engine refused the token (AUTH_FAILED); input keeps being read into the WAL, sending is retried at the maximum backoff",
		"output.token (or output.token-file) must equal the EdgeSocket source's token; then run edge-agent reload (or send SIGHUP)"
}

// fatalError wraps a refusal for Run when output.on-refusal is exit. The
// sentinel's text already says which setting to fix.
func fatalError(err error) error {
	return fmt.Errorf("stop edge agent (output.on-refusal: exit): %w", err)
}
