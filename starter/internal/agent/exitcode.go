package agent

import (
	"errors"
	"fmt"

	"github.com/edge-agent/edge-agent/transport"
)

func isFatal(err error) bool    { return transport.IsFatal(err) }
func isRejected(err error) bool { return errors.Is(err, transport.ErrRejected) }

// fatalError wraps a fatal transport error for Run. The sentinel's text
// already says which setting to fix.
func fatalError(err error) error {
	return fmt.Errorf("stop edge agent: %w", err)
}
