package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	ucli "github.com/urfave/cli/v2"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
)

// serviceName is the name edge-agent is registered under with the Windows
// service control manager.
const serviceName = "edge-agent"

func (a *agentCLI) serviceHelp(c *ucli.Context) error {
	if c.Args().Present() {
		return unknownCommand(c)
	}
	_ = ucli.ShowSubcommandHelp(c)
	return quietCode(exitcode.Usage)
}

// serviceInstall registers the service to run `service run` with the
// config and install root resolved now: the service starts with the
// system's working folder and environment, where neither could be found.
func (a *agentCLI) serviceInstall(c *ucli.Context) error {
	exe, err := a.env.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	args := []string{"service", "run", "--home", a.home()}
	explicit, err := explicitConfig(c)
	if err != nil {
		return err
	}
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return fmt.Errorf("config path: %w", err)
		}
		args = append(args, "--config", abs)
	}
	if lvl := c.String("log-level"); lvl != "" {
		if _, err := logging.ParseLevel(lvl); err != nil {
			return withCode(exitcode.Usage, fmt.Errorf("--log-level: %w", err))
		}
		args = append(args, "--log-level", lvl)
	}
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("connect to the service manager (an elevated prompt is needed): %w", err)
	}
	defer m.Disconnect()
	if s, err := m.OpenService(serviceName); err == nil {
		s.Close()
		return fmt.Errorf("service %s is already installed; run edge-agent service uninstall first", serviceName)
	}
	s, err := m.CreateService(serviceName, exe, mgr.Config{
		DisplayName: "edge-agent",
		Description: "Tails local files and delivers every line to Apache SeaTunnel over EdgeSocket.",
		StartType:   mgr.StartAutomatic,
	}, args...)
	if err != nil {
		return fmt.Errorf("create service %s: %w", serviceName, err)
	}
	defer s.Close()
	// Restart after a crash, as systemd's Restart=on-failure does; an
	// exit the agent reports itself (a config error) is not a crash and
	// is not retried, since retrying cannot fix it.
	restart := []mgr.RecoveryAction{
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 30 * time.Second},
		{Type: mgr.ServiceRestart, Delay: time.Minute},
	}
	if err := s.SetRecoveryActions(restart, uint32((24 * time.Hour).Seconds())); err != nil {
		return fmt.Errorf("set restart on crash for service %s: %w", serviceName, err)
	}
	fmt.Fprintf(a.env.Stdout, "service %s installed: %s %v\nstart it with edge-agent service start\n", serviceName, exe, args)
	return nil
}

func (a *agentCLI) serviceUninstall(*ucli.Context) error {
	m, s, err := openService()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer s.Close()
	st, err := s.Query()
	if err != nil {
		return fmt.Errorf("query service %s: %w", serviceName, err)
	}
	if err := s.Delete(); err != nil {
		return fmt.Errorf("remove service %s: %w", serviceName, err)
	}
	if st.State != svc.Stopped {
		fmt.Fprintf(a.env.Stdout, "service %s marked for removal; it goes once it stops (edge-agent service stop)\n", serviceName)
		return nil
	}
	fmt.Fprintf(a.env.Stdout, "service %s removed\n", serviceName)
	return nil
}

func (a *agentCLI) serviceStart(c *ucli.Context) error {
	m, s, err := openService()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer s.Close()
	if err := s.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
		return fmt.Errorf("start service %s: %w", serviceName, err)
	}
	st, err := waitState(s, svc.Running, c.Duration("timeout"))
	if err != nil {
		return err
	}
	if st.State != svc.Running {
		return fmt.Errorf("service %s did not start (state %d, exit code %d); see the agent's log", serviceName, st.State, serviceExitCode(st))
	}
	fmt.Fprintf(a.env.Stdout, "service %s running (pid %d)\n", serviceName, st.ProcessId)
	return nil
}

func (a *agentCLI) serviceStop(c *ucli.Context) error {
	m, s, err := openService()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer s.Close()
	if _, err := s.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return fmt.Errorf("stop service %s: %w", serviceName, err)
	}
	st, err := waitState(s, svc.Stopped, c.Duration("timeout"))
	if err != nil {
		return err
	}
	if st.State != svc.Stopped {
		return fmt.Errorf("service %s still stopping after %s", serviceName, c.Duration("timeout"))
	}
	fmt.Fprintf(a.env.Stdout, "service %s stopped\n", serviceName)
	return nil
}

func openService() (*mgr.Mgr, *mgr.Service, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the service manager (an elevated prompt is needed): %w", err)
	}
	s, err := m.OpenService(serviceName)
	if err != nil {
		m.Disconnect()
		return nil, nil, fmt.Errorf("open service %s (installed with edge-agent service install?): %w", serviceName, err)
	}
	return m, s, nil
}

// waitState polls the service until it reaches want, a start has ended in
// Stopped, or timeout passes; it returns the last status.
func waitState(s *mgr.Service, want svc.State, timeout time.Duration) (svc.Status, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := s.Query()
		if err != nil {
			return st, fmt.Errorf("query service %s: %w", serviceName, err)
		}
		// A start that failed settles in Stopped; waiting on is pointless.
		failedStart := want == svc.Running && st.State == svc.Stopped
		if st.State == want || failedStart || !time.Now().Before(deadline) {
			return st, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// serviceExitCode is the agent's own exit code when it reported one.
func serviceExitCode(st svc.Status) uint32 {
	if st.Win32ExitCode == uint32(windows.ERROR_SERVICE_SPECIFIC_ERROR) {
		return st.ServiceSpecificExitCode
	}
	return st.Win32ExitCode
}

// serviceRun is the service process: it runs the agent as start does and
// hands the service manager's stop to it.
func (a *agentCLI) serviceRun(c *ucli.Context) error {
	if home := c.String("home"); home != "" {
		getenv := a.env.Getenv
		a.env.Getenv = func(k string) string {
			if k == "EDGE_AGENT_HOME" {
				return home
			}
			return getenv(k)
		}
	}
	explicit, err := explicitConfig(c)
	if err != nil {
		return err
	}
	req := startRequest{home: a.home(), explicit: explicit, logLevel: c.String("log-level"), service: true}
	// A service has no console: what start prints before its log file
	// is open goes to the same file as for start --background.
	out, _, err := a.openOutFile(req.home)
	if err != nil {
		return err
	}
	defer out.Close()
	a.env.Stdout, a.env.Stderr, a.env.StderrFile = out, out, nil
	h := &agentService{
		run: func(ctx context.Context, ready func()) error {
			req.onReady = ready
			return a.runDaemon(ctx, req)
		},
		exitCode: a.exitCode,
	}
	if err := svc.Run(serviceName, h); err != nil {
		return fmt.Errorf("run as service %s (only the service manager runs this): %w", serviceName, err)
	}
	return nil
}

// agentService is the handler the service manager talks to.
type agentService struct {
	run      func(ctx context.Context, ready func()) error
	exitCode func(error) int
}

// stopWaitHint is how long the service manager is told a graceful stop
// may take (start's own stop waits as long) before it considers the
// service hung.
const stopWaitHint = 30 * time.Second

// startWaitHint is how long the service manager is told start-up may take.
const startWaitHint = 2 * time.Minute

// Execute runs the agent under superviseAgent, translating the manager's
// requests and states. The service reads as running once the agent is
// ready, as start --background waits for. The agent's exit code becomes
// the service-specific code, so a config error shows as 78, not as a
// crash.
func (s *agentService) Execute(_ []string, requests <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	accepts := svc.AcceptStop | svc.AcceptShutdown
	err := superviseAgent(s.run, requests,
		func(r svc.ChangeRequest) bool { return r.Cmd == svc.Stop || r.Cmd == svc.Shutdown },
		func(r svc.ChangeRequest) {
			if r.Cmd == svc.Interrogate {
				status <- r.CurrentStatus
			}
		},
		func(st serviceState) {
			switch st {
			case serviceStartPending:
				// Opening a large WAL can take a while; the hint keeps
				// the manager from declaring the start hung meanwhile.
				status <- svc.Status{State: svc.StartPending, Accepts: accepts, WaitHint: uint32(startWaitHint.Milliseconds())}
			case serviceRunning:
				status <- svc.Status{State: svc.Running, Accepts: accepts}
			case serviceStopPending:
				status <- svc.Status{State: svc.StopPending, WaitHint: uint32(stopWaitHint.Milliseconds())}
			}
		})
	if code := s.exitCode(err); code != exitcode.OK {
		return true, uint32(code)
	}
	return false, 0
}
