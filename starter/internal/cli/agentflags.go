package cli

import (
	ucli "github.com/urfave/cli/v2"
)

// flagConfig is the agent.yaml of the agent a command means.
const flagConfig = "config"

// agentFlags are the flags of every command that finds a running agent
// (status, stop, reload, top, db), so one command line names the same
// agent for each of them; extra follow. Each call makes new flags: a
// urfave flag keeps state from the command line it parsed.
func agentFlags(extra ...ucli.Flag) []ucli.Flag {
	return append([]ucli.Flag{
		&ucli.StringFlag{Name: flagConfig, Aliases: []string{"c"}, TakesFile: true,
			Usage: "the agent's agent.yaml: http.* reach its API, queue.path is its WAL (default: found as start finds it)"},
	}, extra...)
}

// checkNamedConfig loads --config when the command line names one, for
// the commands that only signal the agent (stop, reload): a file that
// does not load is an error before any signal is sent, with its
// problems printed, rather than a command that acts on a guess.
func (a *agentCLI) checkNamedConfig(c *ucli.Context) error {
	if !c.IsSet(flagConfig) {
		return nil
	}
	_, _, err := a.loadConfig(c.String(flagConfig), nil)
	return err
}
