package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
)

func (a *agentCLI) configCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "config",
		Usage:     "configuration tools",
		UsageText: "edge-agent config check [--config FILE | FILE]",
		Subcommands: []*ucli.Command{{
			Name:      "check",
			Usage:     "load and validate agent.yaml; print OK or every problem",
			UsageText: "edge-agent config check [--config FILE | FILE]",
			Description: `Loads the file named by --config or FILE (default: the config start would
use) exactly as start does, including ${ENV} expansion and token/key files,
and reports every problem at once, each with its key and line:column. Exit 0 valid, 78 (EX_CONFIG) invalid or missing.
Secrets are never printed.

Examples:
   edge-agent config check
   edge-agent config check --config /etc/edge-agent/agent.yaml
   edge-agent config check config/agent.yaml`,
			Flags:        []ucli.Flag{configFlag()},
			OnUsageError: usageError,
			Action:       a.configCheck,
		}},
		OnUsageError: usageError,
	}
}

func (a *agentCLI) configCheck(c *ucli.Context) error {
	explicit, err := explicitConfig(c)
	if err != nil {
		return err
	}
	home := a.home()
	path, err := paths.ConfigPath(explicit, a.env.Getenv, home)
	if err != nil {
		return withCode(exitcode.Config, err)
	}
	registry := input.NewRegistry(file.NewFactory())
	outputs := output.NewRegistry(output.NewConsoleFactory(), output.NewTransportFactory())
	_, warnings, err := config.Load(path, config.LoadOptions{Registry: registry, Outputs: outputs, Getenv: a.env.Getenv, Home: home})
	for _, w := range warnings {
		fmt.Fprintf(a.env.Stderr, "warning: %s\n", w.String())
	}
	if err != nil {
		problems := flatten(err)
		for _, p := range problems {
			fmt.Fprintln(a.env.Stderr, p.Error())
		}
		fmt.Fprintf(a.env.Stderr, "%s: INVALID (%d problem(s))\n", path, len(problems))
		return quietCode(exitcode.Config)
	}
	fmt.Fprintf(a.env.Stdout, "%s: OK\n", path)
	return nil
}

// flatten lists the problems inside an errors.Join tree, so each gets its
// own line. A *config.FieldError also unwraps to several errors (ErrInvalid
// and its cause) but is one problem, so the walk stops there.
func flatten(err error) []error {
	for e := err; e != nil; {
		if _, ok := e.(*config.FieldError); ok {
			return []error{e}
		}
		if m, ok := e.(interface{ Unwrap() []error }); ok {
			var out []error
			for _, inner := range m.Unwrap() {
				out = append(out, flatten(inner)...)
			}
			if len(out) > 0 {
				return out
			}
			break
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return []error{err}
}
