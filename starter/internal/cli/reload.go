package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

func (a *agentCLI) reloadCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "reload",
		Usage:     "make the running agent re-read its config (SIGHUP)",
		UsageText: "edge-agent reload [--config FILE]",
		Description: `Sends SIGHUP to the agent found through the pid file. The agent re-reads the
file it was started with (same ${ENV}, secret files and install root) and
checks it. A valid file is applied without a restart and without losing
buffered events: input, output, retry, queue limits and the agent's tuning,
and log.level at once. The agent logs "config reloaded" with the new
config_hash and the sections that changed. Keys that only a restart applies
(queue.path, queue.fsync, queue.drain, queue.backlog-share, queue.lanes,
queue.drop-from, agent.delivery-guarantee, the ids, log.file and the other
log.* keys but log.level) are logged at WARN as needing a
restart and keep their old value. An invalid file is rejected: every
problem is logged at ERROR with its line:column, and the old config keeps
running. While a config from the OpAMP server is in force, the file gives
its management section and queue.path and the remote config keeps the
rest (the agent logs config_source remote).

With --config, that file is checked first, as config check does: an
invalid one is refused here (exit 78, each problem printed) and the agent
is not signalled.

This command returns once the signal is sent; the outcome is in the
agent's log. Exit codes: 0 signal sent, 3 the agent is not running.
Under systemd: ExecReload=/bin/kill -HUP $MAINPID. On Windows, which has no
SIGHUP, it sets a named event the agent creates at start
(edge-agent-<pid>-reload) instead.

Examples:
   edge-agent reload
   kill -HUP "$(cat edge-agent.pid)"`,
		Flags:        agentFlags(),
		OnUsageError: usageError,
		Action:       a.reload,
	}
}

func (a *agentCLI) reload(c *ucli.Context) error {
	if err := a.checkNamedConfig(c); err != nil {
		return err
	}
	st, _, err := a.runningAgent()
	if err != nil {
		return err
	}
	if !st.Running {
		return quietCode(exitcode.NotRunning)
	}
	gone, err := requestReload(st.PID)
	if err != nil {
		return err
	}
	if gone {
		fmt.Fprintln(a.env.Stdout, "edge-agent is not running")
		return quietCode(exitcode.NotRunning)
	}
	fmt.Fprintf(a.env.Stdout, "reload requested (%s); the agent logs the outcome\n", reloadHow(st.PID))
	return nil
}
