package cli

import (
	"time"

	ucli "github.com/urfave/cli/v2"
)

// serviceCommand runs edge-agent as a Windows service. The subcommands
// are the same on every system so that the help reads the same; off
// Windows each says it is Windows-only and exits with the usage code.
func (a *agentCLI) serviceCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "service",
		Usage:       "install, remove, start or stop edge-agent as a Windows service (Windows only)",
		UsageText:   "edge-agent service install|uninstall|start|stop [options]",
		Description: serviceDescription,
		Action:      a.serviceHelp,
		Subcommands: []*ucli.Command{
			{
				Name:      "install",
				Usage:     "register the Windows service (automatic start)",
				UsageText: "edge-agent service install [--config FILE] [--log-level LEVEL]",
				Flags: []ucli.Flag{
					configFlag(),
					&ucli.StringFlag{Name: "log-level", Usage: "override log.level in the service"},
				},
				Action: a.serviceInstall,
			},
			{
				Name:      "uninstall",
				Usage:     "remove the Windows service (removed once it has stopped)",
				UsageText: "edge-agent service uninstall",
				Action:    a.serviceUninstall,
			},
			{
				Name:      "start",
				Usage:     "start the Windows service and wait until it runs",
				UsageText: "edge-agent service start [--timeout DURATION]",
				Flags:     []ucli.Flag{serviceTimeoutFlag()},
				Action:    a.serviceStart,
			},
			{
				Name:      "stop",
				Usage:     "stop the Windows service gracefully and wait until it has stopped",
				UsageText: "edge-agent service stop [--timeout DURATION]",
				Flags:     []ucli.Flag{serviceTimeoutFlag()},
				Action:    a.serviceStop,
			},
			{
				// What the service control manager runs; not for people.
				Name:   "run",
				Hidden: true,
				Flags: []ucli.Flag{
					configFlag(),
					&ucli.StringFlag{Name: "log-level"},
					&ucli.StringFlag{Name: "home"},
				},
				Action: a.serviceRun,
			},
		},
	}
}

// serviceDescription is service's --help text.
const serviceDescription = `Registers edge-agent with the Windows service control manager as the service
"edge-agent" (automatic start), and starts, stops or removes it. The service
runs "edge-agent service run" with the config and install root resolved at
install time, and stops gracefully on a stop request or a system shutdown,
as start does on SIGTERM: input stops, memory is flushed to the WAL, the
WAL is closed. install, uninstall, start and stop need an elevated prompt.

On other systems these commands exit 64: run edge-agent under systemd (see
the README) or with start --background.

Examples:
   edge-agent service install --config C:\edge-agent\config\agent.yaml
   edge-agent service start
   edge-agent service stop --timeout 1m
   edge-agent service uninstall`

func serviceTimeoutFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the service to reach the state"}
}
