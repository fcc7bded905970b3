package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/dbcli"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
)

// dbCommand mounts the db tools. They resolve the install root exactly as
// start does, so `db` always inspects the WAL the agent writes.
func (a *agentCLI) dbCommand() *ucli.Command {
	home := a.home()
	cmd := dbcli.Command(dbcli.Env{
		Home:    home,
		PIDFile: func() string { return paths.PIDFile(a.env.Getenv, home) },
		Stdout:  a.env.Stdout,
		Stderr:  a.env.Stderr,
		Getenv:  a.env.Getenv,
	})
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = usageError
	}
	return cmd
}
