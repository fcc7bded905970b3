package cli

import (
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

func (a *agentCLI) stopCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "stop",
		Usage:     "stop a running agent gracefully (" + stopHow + ", then wait)",
		UsageText: "edge-agent stop [--config FILE] [--timeout DURATION] [--kill=false]",
		Description: `Sends SIGTERM to the pid in the pid file and waits until the process is
gone: the agent stops reading, flushes memory to the WAL and closes it. If it
is still running after --timeout, SIGKILL follows (nothing stored is lost;
--kill=false only reports and exits 1). Exits 0 when the agent is not running. A --config that does not load is
an error (exit 78) before any signal is sent.

On Windows there is no SIGTERM: stop sets a named event the agent creates
at start (edge-agent-<pid>-stop) and the agent stops as on SIGTERM; --kill
ends it with TerminateProcess. An agent running as a Windows service is
stopped with edge-agent service stop instead.

Examples:
   edge-agent stop
   edge-agent stop --timeout 2m --kill=false`,
		Flags: agentFlags(
			&ucli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for a graceful stop"},
			&ucli.BoolFlag{Name: "kill", Value: true, Usage: "kill it (" + killHow + ") when --timeout runs out"},
		),
		OnUsageError: usageError,
		Action:       a.stop,
	}
}

// runningAgent finds the running agent through the pid file's lock, for
// the commands that signal it; running is false when none runs (they say
// so). An agent that holds the lock but has not written its pid yet is an
// error to try again.
func (a *agentCLI) runningAgent() (st process.State, pidFile string, err error) {
	pidFile = paths.PIDFile(a.env.Getenv, a.home())
	st, err = process.Probe(pidFile)
	if err != nil {
		return st, pidFile, err
	}
	if !st.Running {
		fmt.Fprintln(a.env.Stdout, "edge-agent is not running")
		return st, pidFile, nil
	}
	if st.PID == 0 {
		return st, pidFile, fmt.Errorf("edge-agent is starting and has not written its pid to %s yet; try again", pidFile)
	}
	return st, pidFile, nil
}

func (a *agentCLI) stop(c *ucli.Context) error {
	if err := a.checkNamedConfig(c); err != nil {
		return err
	}
	st, pidFile, err := a.runningAgent()
	if err != nil || !st.Running {
		return err
	}
	if err := requestStop(st.PID); err != nil {
		return err
	}
	fmt.Fprintf(a.env.Stdout, "stopping edge-agent (pid %d)", st.PID)
	if waitGone(pidFile, c.Duration("timeout")) {
		fmt.Fprintln(a.env.Stdout, "\nedge-agent stopped")
		return nil
	}
	if !c.Bool("kill") {
		fmt.Fprintln(a.env.Stdout)
		return fmt.Errorf("edge-agent (pid %d) still running after %s", st.PID, c.Duration("timeout"))
	}
	fmt.Fprintf(a.env.Stdout, "\nstill running after %s: killing it (%s)\n", c.Duration("timeout"), killHow)
	if err := killAgent(st.PID); err != nil {
		return err
	}
	if !waitGone(pidFile, 5*time.Second) {
		return fmt.Errorf("edge-agent (pid %d) survived %s", st.PID, killHow)
	}
	// A killed agent cannot remove its own pid file; nobody holds it now,
	// so it reads as not running, and the next start takes it over.
	fmt.Fprintln(a.env.Stdout, "edge-agent killed")
	return nil
}

// waitGone polls until the pid file's lock is released (its holder has
// exited, whatever state its pid is left in) or d has passed.
func waitGone(pidFile string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		st, err := process.Probe(pidFile)
		if err == nil && !st.Running {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// home is the install root: EDGE_AGENT_HOME, else the folder above bin/
// holding this binary, else the working directory.
func (a *agentCLI) home() string {
	exe, err := a.env.Executable()
	if err != nil {
		exe = ""
	}
	return paths.Home(a.env.Getenv, exe)
}
