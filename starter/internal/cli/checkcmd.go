package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/daemon"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
)

func (a *agentCLI) checkCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "check",
		Usage:     "test what the config points at",
		UsageText: "edge-agent check output|disk [--config FILE | FILE]",
		Subcommands: []*ucli.Command{a.checkDiskCommand(), {
			Name:      "output",
			Usage:     "connect to the engine and authenticate, step by step, sending no data",
			UsageText: "edge-agent check output [--config FILE | FILE]",
			Description: `Loads the config start would use (--config or FILE, $EDGE_AGENT_CONFIG,
$EDGE_AGENT_HOME/config/agent.yaml), builds its output, and for output.type
transport runs each step against the engine, one line each with its time:
resolve the endpoint's host, connect over TCP, the TLS handshake (when
output.tls.enabled; with the engine certificate's subject and expiry), and
authenticate (send __AUTH__, read ACK, AUTH_FAILED or REJECTED). No batch is
sent. A failed step says what to fix. output.type console connects to
nothing: there is nothing to check.

The engine serves one collector at a time: while an agent is connected to it,
the check gets REJECTED, and while the check holds the engine (a few
milliseconds) an agent reconnecting at that moment is refused and retries.
Run it before start, or against an engine no agent uses. The token is never
printed.

Exit codes: 0 the engine accepted the token, 1 a network or engine failure
(unreachable, TLS, REJECTED), 4 AUTH_FAILED (fix output.token), 78 missing or
invalid config.

Examples:
   edge-agent check output
   edge-agent check output --config /etc/edge-agent/agent.yaml
   edge-agent check output && edge-agent start --background`,
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "agent.yaml to load", TakesFile: true},
			},
			OnUsageError: usageError,
			Action:       a.checkOutput,
		}},
		OnUsageError: usageError,
	}
}

func (a *agentCLI) checkOutput(c *ucli.Context) error {
	explicit, err := explicitConfig(c)
	if err != nil {
		return err
	}
	cfg, path, err := a.loadConfig(explicit, a.env.Stdout)
	if err != nil {
		return err
	}
	typ := cfg.Output.Type
	if typ == output.TypeConsole {
		fmt.Fprintf(a.env.Stdout, "%s: output.type console writes events to stdout and connects to nothing: nothing to check\n", path)
		return nil
	}
	f, err := daemon.LoadOptions(a.home(), a.env.Getenv, a.env.Stdout, nil).Outputs.Get(typ)
	if err != nil {
		return withCode(exitcode.Config, fmt.Errorf("%s: output.type: %w", path, err))
	}
	snd, _, err := f.Create(cfg.Output.Options, output.Settings{ID: cfg.Output.ID, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		// Load checked the settings; what is left is a file they name
		// (a TLS CA or certificate) that cannot be used.
		return withCode(exitcode.Config, fmt.Errorf("%s: output: %w", path, err))
	}
	defer snd.Close()
	if each, ok := snd.(interface {
		ProbeEach(ctx context.Context) []client.ProbeResult
	}); ok {
		return a.checkEndpoints(c.Context, typ, path, each.ProbeEach(c.Context))
	}
	prober, ok := snd.(interface {
		Probe(ctx context.Context) client.ProbeResult
	})
	if !ok {
		return withCode(exitcode.Failure, fmt.Errorf("output.type %s cannot be checked", typ))
	}
	fmt.Fprintf(a.env.Stdout, "checking output.type %s with %s\n", typ, path)
	res := prober.Probe(c.Context)
	printProbe(a.env.Stdout, res, time.Now())
	if err := res.Err(); err != nil {
		return withCode(exitcode.For(err), fmt.Errorf("check output: %w\nfix: %s", err, probeFix(res)))
	}
	fmt.Fprintf(a.env.Stdout, "OK: the engine at %s accepted output.token\n", res.Endpoint)
	return nil
}

// checkEndpoints reports the probe of each endpoint of output.endpoints:
// OK when every one accepted output.token, else the exit code of the
// first that did not (a standby that refuses the token would fail the
// day it is needed).
func (a *agentCLI) checkEndpoints(_ context.Context, typ, path string, results []client.ProbeResult) error {
	fmt.Fprintf(a.env.Stdout, "checking output.type %s with %s: %d endpoints\n", typ, path, len(results))
	var first error
	var fix string
	for _, res := range results {
		fmt.Fprintf(a.env.Stdout, "endpoint %s\n", res.Endpoint)
		printProbe(a.env.Stdout, res, time.Now())
		if err := res.Err(); err != nil && first == nil {
			first, fix = err, probeFix(res)
		}
	}
	if first != nil {
		return withCode(exitcode.For(first), fmt.Errorf("check output: %w\nfix: %s", first, fix))
	}
	fmt.Fprintf(a.env.Stdout, "OK: every endpoint accepted output.token\n")
	return nil
}

// readConfig finds and loads the config the way every command does: the
// path (--config, EDGE_AGENT_CONFIG, the install root) and
// daemon.LoadOptions. path is "" when no file was found. stdout takes the
// console output's events; nil where no sender is built.
func (a *agentCLI) readConfig(explicit, home string, stdout io.Writer) (cfg *config.Config, warnings []config.Warning, path string, err error) {
	path, err = paths.ConfigPath(explicit, a.env.Getenv, home)
	if err != nil {
		return nil, nil, "", err
	}
	cfg, warnings, err = config.Load(path, daemon.LoadOptions(home, a.env.Getenv, stdout, nil))
	return cfg, warnings, path, err
}

// loadConfig loads the config start would use, prints its warnings and,
// when it is invalid, every problem; the error then carries
// exitcode.Config and needs no more printing.
func (a *agentCLI) loadConfig(explicit string, stdout io.Writer) (*config.Config, string, error) {
	cfg, warnings, path, err := a.readConfig(explicit, a.home(), stdout)
	if path == "" {
		return nil, "", withCode(exitcode.Config, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(a.env.Stderr, "warning: %s\n", w.String())
	}
	if err != nil {
		problems := config.Problems(err)
		for _, p := range problems {
			fmt.Fprintln(a.env.Stderr, p.Error())
		}
		fmt.Fprintf(a.env.Stderr, "%s: INVALID (%d problem(s))\n", path, len(problems))
		return nil, path, quietCode(exitcode.Config)
	}
	return cfg, path, nil
}

// printProbe writes one line per step: name, OK/FAIL/SKIP, time, detail.
func printProbe(w io.Writer, res client.ProbeResult, now time.Time) {
	for _, st := range res.Steps {
		switch {
		case st.Skipped:
			fmt.Fprintf(w, "%-8s %-4s %9s  %s\n", st.Step, "SKIP", "", skipReason(st))
		case st.Err != nil:
			detail := st.Err.Error()
			if st.Detail != "" && !strings.Contains(detail, st.Detail) {
				detail = st.Detail + ": " + detail
			}
			fmt.Fprintf(w, "%-8s %-4s %9s  %s\n", st.Step, "FAIL", millis(st.Took), detail)
		default:
			fmt.Fprintf(w, "%-8s %-4s %9s  %s\n", st.Step, "OK", millis(st.Took), st.Detail)
			if st.Step == client.StepTLS && res.PeerCertificate != nil {
				fmt.Fprintf(w, "%-8s %-4s %9s  %s\n", "", "", "", certLine(res.PeerCertificate, now))
			}
		}
	}
}

func skipReason(st client.StepResult) string {
	if st.Step == client.StepTLS {
		return "output.tls.enabled is false"
	}
	return st.Detail
}

// millis shows a duration in milliseconds with one decimal, so the steps
// line up and compare at a glance.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
}

// certLine names the engine's certificate and when it expires, warning
// when that is past or near.
func certLine(cert *x509.Certificate, now time.Time) string {
	line := fmt.Sprintf("peer certificate: subject %q, issuer %q, expires %s",
		cert.Subject.String(), cert.Issuer.String(), cert.NotAfter.UTC().Format(time.DateTime+" UTC"))
	switch left := cert.NotAfter.Sub(now); {
	case left <= 0:
		line += " (EXPIRED)"
	case left < 30*24*time.Hour:
		line += fmt.Sprintf(" (in %d days: renew it)", int(left.Hours()/24))
	}
	return line
}

// probeFix tells the operator what to change for the step that failed,
// in terms of agent.yaml's keys.
func probeFix(res client.ProbeResult) string {
	var failed client.StepResult
	for _, st := range res.Steps {
		if st.Err != nil {
			failed = st
		}
	}
	err := failed.Err
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var netErr net.Error
	switch {
	case errors.Is(err, transport.ErrAuthFailed):
		return "output.token must equal the EdgeSocket source's token"
	case errors.Is(err, transport.ErrRejected):
		return "the engine takes one collector at a time and refused this one: stop the agent (or other collector) connected to it, or retry later"
	case errors.Is(err, transport.ErrClosed):
		return "the check was interrupted; run it again"
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the host in output.endpoint (%s) does not resolve: correct it or its DNS entry", res.Endpoint)
	case errors.As(err, &unknownCA):
		return "the engine's certificate is not signed by a root in output.tls.ca-file (or the system roots when unset): point ca-file at the CA that signed it"
	case errors.As(err, &hostErr):
		return "the engine's certificate does not name the host in output.endpoint: set output.tls.server-name to a name it carries"
	case errors.As(err, &invalid):
		return "the engine's certificate is not valid (expired, not yet valid, or not for server use): renew it on the engine"
	case failed.Step == client.StepTLS:
		return "the TLS handshake failed: does the engine side (or its TLS proxy) serve TLS on output.endpoint? If it does not, set output.tls.enabled: false"
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("nothing listens on %s: start the engine's EdgeSocket source, or correct output.endpoint", res.Endpoint)
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		if failed.Step == client.StepAuth {
			return "the engine did not answer __AUTH__ within output.read-timeout-ms: is output.endpoint the EdgeSocket source's port?"
		}
		return "no answer within output.connect-timeout-ms: check output.endpoint and any firewall on the way"
	case errors.Is(err, transport.ErrProtocol), failed.Step == client.StepAuth:
		return "the peer did not answer like an EdgeSocket source: is output.endpoint its port, and does TLS on both sides agree (output.tls.enabled)?"
	}
	return "check output.endpoint and that the engine is reachable from this host"
}
