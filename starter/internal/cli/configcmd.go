package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/config"
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
	// Checking builds no sender, so the console output needs no writer.
	inputs, outputs := registries(nil)
	_, path, err := a.loadConfig(explicit, inputs, outputs)
	if err != nil {
		return err
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
