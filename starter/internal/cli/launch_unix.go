//go:build unix

package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/edge-agent/edge-agent/starter/internal/daemon"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/process"
	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
)

// launch is the self-upgrade's launcher at `start`: it runs the version
// versions/state.json names, or the trial of a new one. handled false
// means this binary is the one to run.
func (a *agentCLI) launch(ctx context.Context, req startRequest) (handled bool, err error) {
	if upgrade.InTrial(a.env.Getenv) {
		return false, nil // the trial itself
	}
	layout := daemon.UpgradeLayout(a.env.Getenv, req.home)
	st, err := layout.Load()
	if err != nil {
		a.errorf("self-upgrade: %v; running this binary", err)
		return false, nil
	}
	exe, err := a.env.Executable()
	if err != nil {
		return false, nil
	}
	installed := upgrade.Slot{Path: filepath.Join(req.home, "bin", filepath.Base(exe))}
	if samePathCLI(exe, installed.Path) {
		installed.Version = a.env.Build.Version
	}
	d := upgrade.Decide(st, upgrade.Slot{Version: a.env.Build.Version, Path: exe}, installed)
	if d.Save != nil {
		if err := layout.Save(*d.Save); err != nil {
			a.errorf("self-upgrade: %v", err)
		}
	}
	if d.Note != "" {
		fmt.Fprintf(a.env.Stderr, "edge-agent: %s\n", d.Note)
	}
	switch d.Action {
	case upgrade.ExecOther:
		if _, err := os.Stat(d.Path); err != nil {
			// A staged version deleted by hand: the installed binary runs.
			a.errorf("self-upgrade: %s names %s: %v; running this binary", layout.StateFile(), d.Path, err)
			return false, nil
		}
		// The whole command line: a readiness pipe of start --background
		// is inherited by the exec'd binary.
		return true, a.execVersion(d.Path, a.env.Args)
	case upgrade.SuperviseTrial:
		return true, a.superviseTrial(ctx, layout, req.home)
	}
	return false, nil
}

// superviseTrial runs the trial as a child and execs the verdict: the
// new version once it confirmed itself, else the previous one.
func (a *agentCLI) superviseTrial(ctx context.Context, layout upgrade.Layout, home string) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	args := restartArgs(a.env.Args)
	sup := &upgrade.Supervisor{Layout: layout, Start: func(path, version string) (upgrade.Child, error) {
		cmd := exec.Command(path, args[1:]...)
		cmd.Args[0] = args[0]
		cmd.Env = append(a.envWithout("NOTIFY_SOCKET", upgrade.EnvTrial, "EDGE_AGENT_HOME"),
			"EDGE_AGENT_HOME="+home, upgrade.EnvTrial+"="+version)
		cmd.Stdout, cmd.Stderr = a.env.Stdout, a.env.Stderr
		cmd.SysProcAttr = trialProcAttr()
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", path, err)
		}
		c := &trialChild{cmd: cmd, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(c.done) }()
		go func() {
			for {
				select {
				case <-c.done:
					return
				case <-hup:
					_ = cmd.Process.Signal(syscall.SIGHUP) // a reload is the trial's
				}
			}
		}()
		return c, nil
	}}
	// Under systemd (Type=notify, NotifyAccess=main) only this process
	// may notify, and the trial is not told the socket: the launcher
	// reports ready itself, or a trial pending at boot would time out the
	// unit's start. The agent it execs next reports ready again.
	_ = process.Notify(a.env.Getenv("NOTIFY_SOCKET"), "READY=1\nSTATUS=trying a new version")
	res, err := sup.Supervise(ctx)
	if err != nil {
		return fmt.Errorf("self-upgrade trial: %w", err)
	}
	switch res.Verdict {
	case upgrade.Stopped:
		return quietCode(res.ExitCode)
	case upgrade.RolledBack:
		fmt.Fprintf(a.env.Stderr, "edge-agent: %s\n", res.Reason)
	}
	exe := res.Exec
	if exe == "" {
		exe = filepath.Join(home, "bin", "edge-agent")
	}
	return a.execVersion(exe, args)
}

// execVersion replaces this process with another version's binary, the
// install root passed on (its own would be versions/<v>).
func (a *agentCLI) execVersion(path string, args []string) error {
	env := append(a.envWithout(upgrade.EnvTrial, "EDGE_AGENT_HOME"), "EDGE_AGENT_HOME="+a.home())
	if err := syscall.Exec(path, args, env); err != nil {
		return withCode(exitcode.Failure, fmt.Errorf("self-upgrade: exec %s: %w", path, err))
	}
	return nil
}

func (a *agentCLI) envWithout(names ...string) []string {
	var out []string
	for _, kv := range a.env.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

type trialChild struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (c *trialChild) Done() <-chan struct{}    { return c.done }
func (c *trialChild) ExitCode() int            { return c.cmd.ProcessState.ExitCode() }
func (c *trialChild) Signal(s os.Signal) error { return c.cmd.Process.Signal(s) }

func samePathCLI(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return a == b || err1 == nil && err2 == nil && ra == rb
}
