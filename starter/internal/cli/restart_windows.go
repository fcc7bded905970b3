//go:build windows

package cli

import "errors"

func (a *agentCLI) reexec() error {
	return errors.New("restart in place is not supported on Windows: restart the service (edge-agent service stop, then start)")
}
