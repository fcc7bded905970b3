//go:build windows

package cli

import "errors"

// canRestart: Windows has no exec that keeps the process; a restart would
// be a new process the service manager does not know. The agent therefore
// does not report the restart capability there, and refuses the command.
const canRestart = false

func (a *agentCLI) reexec() error {
	return errors.New("restart in place is not supported on Windows: restart the service (edge-agent service stop, then start)")
}
