//go:build !windows

package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

func windowsOnly(c *ucli.Context) error {
	return withCode(exitcode.Usage, fmt.Errorf("%s is Windows-only; here run edge-agent under systemd or with start --background", commandPath(c)))
}

func (a *agentCLI) serviceHelp(c *ucli.Context) error      { return windowsOnly(c) }
func (a *agentCLI) serviceInstall(c *ucli.Context) error   { return windowsOnly(c) }
func (a *agentCLI) serviceUninstall(c *ucli.Context) error { return windowsOnly(c) }
func (a *agentCLI) serviceStart(c *ucli.Context) error     { return windowsOnly(c) }
func (a *agentCLI) serviceStop(c *ucli.Context) error      { return windowsOnly(c) }
func (a *agentCLI) serviceRun(c *ucli.Context) error       { return windowsOnly(c) }
