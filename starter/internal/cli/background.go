package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
)

// defaultReadyTimeout is EDGE_AGENT_STARTUP_READY_TIMEOUT_S's default, as in
// the Java launcher.
const defaultReadyTimeout = 10 * time.Second

// startBackground re-executes this binary as a detached `start` (own
// session, stdio to edge-agent.out) and waits for it to report readiness
// through a pipe. Unlike the Java launcher, which greps its log for the
// marker and exits 0 even when it never appears, this returns 0 only when
// the child really is ready, and otherwise the child's own exit code and
// message.
func (a *agentCLI) startBackground(ctx context.Context, req startRequest) error {
	pidFile := paths.PIDFile(a.env.Getenv, req.home)
	if st, err := process.Probe(pidFile); err == nil && st.Running {
		fmt.Fprintf(a.env.Stdout, "edge-agent is already running (pid %d)\n", st.PID)
		return nil
	}
	timeout, err := readyTimeout(a.env.Getenv)
	if err != nil {
		return withCode(exitcode.Usage, err)
	}
	args, err := childArgs(req)
	if err != nil {
		return err
	}
	out, outPath, err := a.openOutFile(req.home)
	if err != nil {
		return err
	}
	defer out.Close()
	child, err := a.spawnDetached(req.home, args, out)
	if err != nil {
		return err
	}
	defer child.ready.Close()
	return a.awaitReady(ctx, child, timeout, outPath)
}

// childArgs are the flags start passes on to its detached child.
func childArgs(req startRequest) ([]string, error) {
	var args []string
	if req.explicit != "" {
		// The child runs in the install root; a path the user typed is
		// relative to where they typed it.
		abs, err := filepath.Abs(req.explicit)
		if err != nil {
			return nil, fmt.Errorf("config path: %w", err)
		}
		args = append(args, "--config", abs)
	}
	if req.logLevel != "" {
		args = append(args, "--log-level", req.logLevel)
	}
	return args, nil
}

// detachedChild is a started background agent and the read end of its
// readiness pipe.
type detachedChild struct {
	cmd   *exec.Cmd
	ready *os.File
}

// spawnDetached starts `start args` in home, detached, with stdout and
// stderr to out and the readiness pipe's write end handed over.
func (a *agentCLI) spawnDetached(home string, args []string, out *os.File) (*detachedChild, error) {
	exe, err := a.env.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("readiness pipe: %w", err)
	}
	// Only the child may hold the write end, so EOF means it closed it or
	// exited.
	defer w.Close()
	cmd := exec.Command(exe)
	// EDGE_AGENT_HOME pins the child to the install root this command
	// resolved, whatever its working directory or executable path says.
	cmd.Env = append(a.env.Environ(), "EDGE_AGENT_HOME="+home)
	cmd.Dir = home
	cmd.Stdout = out
	cmd.Stderr = out
	fd, err := detach(cmd, w)
	if err != nil {
		r.Close()
		return nil, err
	}
	// The pipe's number is known only once detach has placed it.
	cmd.Args = append([]string{exe, "start", "--" + notifyFDFlag, strconv.Itoa(fd)}, args...)
	if err := cmd.Start(); err != nil {
		r.Close()
		return nil, fmt.Errorf("start background agent: %w", err)
	}
	return &detachedChild{cmd: cmd, ready: r}, nil
}

// awaitReady waits for the child's one line: ready, or why it failed.
func (a *agentCLI) awaitReady(ctx context.Context, child *detachedChild, timeout time.Duration, outPath string) error {
	pid := child.cmd.Process.Pid
	lineCh := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(child.ready).ReadString('\n')
		lineCh <- strings.TrimSpace(line)
	}()
	exitCh := make(chan int, 1)
	go func() {
		err := child.cmd.Wait()
		exitCh <- exitStatus(err)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case line := <-lineCh:
		if strings.HasPrefix(line, "ready") {
			fmt.Fprintf(a.env.Stdout, "edge-agent started (pid %d)\n", pid)
			// The child is in its own session; leaving without Wait hands
			// it to init.
			return nil
		}
		if code, msg, ok := parseFailure(line); ok {
			waitExit(exitCh, 2*time.Second)
			return withCode(code, errors.New(msg))
		}
		code := waitExit(exitCh, 2*time.Second)
		if code <= 0 {
			code = exitcode.Failure
		}
		return withCode(code, fmt.Errorf("edge-agent (pid %d) exited before it was ready (status %d); see %s", pid, code, outPath))
	case <-timer.C:
		return withCode(exitcode.Failure, fmt.Errorf("edge-agent (pid %d) did not report readiness within %s; it may still be starting: check 'edge-agent status' and %s", pid, timeout, outPath))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readyTimeout reads EDGE_AGENT_STARTUP_READY_TIMEOUT_S (whole seconds).
func readyTimeout(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv("EDGE_AGENT_STARTUP_READY_TIMEOUT_S"))
	if v == "" {
		return defaultReadyTimeout, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("EDGE_AGENT_STARTUP_READY_TIMEOUT_S=%q: want a positive number of seconds", v)
	}
	return time.Duration(n) * time.Second, nil
}

// waitExit returns the child's exit status, or -1 if it has not exited
// within d.
func waitExit(ch <-chan int, d time.Duration) int {
	select {
	case code := <-ch:
		return code
	case <-time.After(d):
		return -1
	}
}

func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// openOutFile opens, for appending, the file that takes the stdout and
// stderr of an agent with no terminal: EDGE_AGENT_LOG_FILE, by default
// edge-agent.out in the install root. What the agent prints before its
// log file is open (a config error) ends up there.
func (a *agentCLI) openOutFile(home string) (*os.File, string, error) {
	outPath := a.env.Getenv(paths.EnvOutFile)
	if outPath == "" {
		outPath = "edge-agent.out"
	}
	outPath = paths.Resolve(home, outPath)
	if err := os.MkdirAll(filepath.Dir(outPath), 0o750); err != nil {
		return nil, outPath, fmt.Errorf("create %s folder: %w", outPath, err)
	}
	out, err := os.OpenFile(outPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, outPath, fmt.Errorf("open %s: %w", outPath, err)
	}
	return out, outPath, nil
}
