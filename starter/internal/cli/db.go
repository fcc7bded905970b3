package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/dbcli"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
)

// dbCommand mounts the db tools. They resolve the install root and the
// config exactly as start does, so `db` inspects the WAL the agent writes
// and finds the agent's API.
func (a *agentCLI) dbCommand() *ucli.Command {
	home := a.home()
	cmd := dbcli.Command(dbcli.Env{
		Home:    home,
		PIDFile: func() string { return paths.PIDFile(a.env.Getenv, home) },
		Stdout:  a.env.Stdout,
		Stderr:  a.env.Stderr,
		Getenv:  a.env.Getenv,
		// --config, read by the db tools under this name.
		AgentFlags: agentFlags,
		LoadConfig: func(explicit string) (dbcli.Config, error) {
			// Reading the config builds no sender: the console output needs no writer.
			cfg, _, _, err := a.readConfig(explicit, home, nil)
			if err != nil {
				return dbcli.Config{}, err
			}
			return dbcli.Config{QueuePath: cfg.Queue.Path, HTTP: cfg.HTTP, Encryption: cfg.Queue.Encryption}, nil
		},
	})
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = usageError
	}
	return cmd
}
