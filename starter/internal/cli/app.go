package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/suggest"
)

// Build stamps, set at link time by `make build` and the dist builder:
//
//	-ldflags "-X github.com/edge-agent/edge-agent/starter/internal/cli.Version=v0.1.0
//	          -X github.com/edge-agent/edge-agent/starter/internal/cli.Commit=<sha>
//	          -X github.com/edge-agent/edge-agent/starter/internal/cli.BuildDate=<RFC 3339>"
//
// They are the only package-level variables; Main copies them into Env so
// that commands and tests never read them directly.
var (
	Version   = "dev"
	Commit    = ""
	BuildDate = ""
)

// BuildInfo is what `edge-agent version` shows.
type BuildInfo struct {
	Version, Commit, Date string
}

// Env is everything a command may take from the process. Main fills it from
// the real process; tests fill it by hand.
type Env struct {
	Args           []string
	Stdout, Stderr io.Writer
	// Stdin is what `process` reads; nil reads nothing.
	Stdin io.Reader
	// StderrFile is the real stderr when there is one; it decides whether
	// logs go to a terminal. Nil means "not a terminal".
	StderrFile *os.File
	Getenv     func(string) string
	Environ    func() []string
	// Executable returns this binary's path (install root discovery and
	// start --background re-executing itself).
	Executable func() (string, error)
	Build      BuildInfo
	// Exit ends the process at once; used only for a forced stop on a
	// second signal. Nil means os.Exit.
	Exit func(code int)
}

// Main runs the command line of the real process and returns its exit code.
func Main() int {
	return Run(context.Background(), Env{
		Args:       os.Args,
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		StderrFile: os.Stderr,
		Getenv:     os.Getenv,
		Environ:    os.Environ,
		Executable: os.Executable,
		Build:      BuildInfo{Version: Version, Commit: Commit, Date: BuildDate},
		Exit:       os.Exit,
	})
}

// exitError carries an exit code through urfave/cli. When quiet is set the
// command already told the user what happened and Run prints nothing more.
type exitError struct {
	code  int
	err   error
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func quietCode(code int) error {
	return &exitError{code: code, err: fmt.Errorf("exit status %d", code), quiet: true}
}

// Run executes env.Args and returns the process exit code.
func Run(ctx context.Context, env Env) int {
	if env.Exit == nil {
		env.Exit = os.Exit
	}
	a := &agentCLI{env: env}
	if err := a.applyPathDefaults(); err != nil {
		a.errorf("%v", err)
		return exitcode.Config
	}
	err := a.app().RunContext(ctx, env.Args)
	return a.exitCode(err)
}

// applyPathDefaults makes the install root's path defaults (a package's
// edge-agent.paths) part of the environment every command reads, so that a
// shell, a container or the service find the same pid and id files.
func (a *agentCLI) applyPathDefaults() error {
	if a.env.Getenv == nil || a.env.Executable == nil {
		return nil
	}
	defs, err := paths.LoadDefaults(a.home())
	if err != nil {
		return err
	}
	a.env.Getenv = paths.WithDefaults(a.env.Getenv, defs)
	return nil
}

func (a *agentCLI) exitCode(err error) int {
	if err == nil {
		return exitcode.OK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.quiet {
			a.errorf("%v", ee.err)
		}
		return ee.code
	}
	// Our commands return exitError; an ExitCoder comes only from urfave/cli
	// itself ("No help topic for …" from `help NAME`), always about the
	// command line, and its code (3) would read as "not running".
	var ec ucli.ExitCoder
	if errors.As(err, &ec) {
		if msg := err.Error(); msg != "" {
			a.errorf("%s", msg)
		}
		return exitcode.Usage
	}
	a.errorf("%v", err)
	return exitcode.Failure
}

// errorf prints a one-line error the way the Java launcher did, so scripts
// that grep for "edge-agent: error:" keep working.
func (a *agentCLI) errorf(format string, args ...any) {
	fmt.Fprintf(a.env.Stderr, "edge-agent: error: "+format+"\n", args...)
}

// agentCLI holds the Env for the command actions.
type agentCLI struct {
	env Env
}

func (a *agentCLI) app() *ucli.App {
	app := &ucli.App{
		Name:      "edge-agent",
		Usage:     "tail local files and deliver every line to Apache SeaTunnel over EdgeSocket",
		UsageText: "edge-agent COMMAND [options]",
		Version:   a.env.Build.Version,
		Description: `Relative paths (WAL, id file, pid file, logs) resolve against the install
root: $EDGE_AGENT_HOME, or the folder above bin/ holding this binary.

Examples:
   edge-agent start                          run in the foreground with config/agent.yaml
   edge-agent start --background             detach, wait for readiness, return
   edge-agent status; echo $?                0 running, 3 not running
   edge-agent status --json                  the same for scripts
   edge-agent stop
   edge-agent config check config/agent.yaml
   edge-agent check output                   connect and authenticate to the engine, send nothing
   edge-agent db wal-summary
   source <(edge-agent completion bash)      TAB completion (also zsh, fish)
   edge-agent man | man -l -                 this help as a manual page`,
		Commands:  a.commands(),
		Writer:    a.env.Stdout,
		ErrWriter: a.env.Stderr,
		// Exit codes are decided in Run; urfave's default handler would
		// call os.Exit from inside a library call.
		ExitErrHandler: func(*ucli.Context, error) {},
		OnUsageError:   usageError,
		Action: func(c *ucli.Context) error {
			if c.Args().Present() {
				return unknownCommand(c)
			}
			_ = ucli.ShowAppHelp(c)
			return quietCode(exitcode.Failure)
		},
	}
	guardCommands(app.Commands)
	return app
}

// commands are edge-agent's commands, in the order --help lists them.
// A new command is one line here and its own file.
func (a *agentCLI) commands() []*ucli.Command {
	return []*ucli.Command{
		a.startCommand(),
		a.stopCommand(),
		a.reloadCommand(),
		a.statusCommand(),
		a.topCommand(),
		a.tapCommand(),
		a.versionCommand(),
		a.configCommand(),
		a.processCommand(),
		a.checkCommand(),
		a.auditCommand(),
		a.dbCommand(),
		a.diagnosticsCommand(),
		a.serviceCommand(),
		a.packageCommand(),
		a.verifyReleaseCommand(),
		a.completionCommand(),
		a.manCommand(),
	}
}

// guardCommands gives every command in the tree, including those another
// package built (db), the same answer to a bad flag or a mistyped
// subcommand: exitcode.Usage and a one-line hint. Left alone, urfave/cli
// prints "Incorrect Usage" and the whole help text on stdout for a bad
// flag, and for an unknown subcommand falls through to its help command,
// which exits 3, the code status uses for "not running".
func guardCommands(cmds []*ucli.Command) {
	for _, cmd := range cmds {
		if cmd.OnUsageError == nil {
			cmd.OnUsageError = usageError
		}
		if len(cmd.Subcommands) == 0 {
			continue
		}
		guardCommands(cmd.Subcommands)
		inner := cmd.Action
		cmd.Action = func(c *ucli.Context) error {
			if c.Args().Present() {
				return unknownCommand(c)
			}
			if inner != nil {
				return inner(c)
			}
			return ucli.ShowSubcommandHelp(c)
		}
	}
}

// unknownCommand reports c's first argument as a mistyped subcommand of
// c's command, with the nearest known name when one is close enough.
func unknownCommand(c *ucli.Context) error {
	name := c.Args().First()
	var known []string
	for _, sub := range c.Command.VisibleCommands() {
		known = append(known, sub.Names()...)
	}
	hint := ""
	if s := suggest.Closest(name, known); s != "" {
		hint = "; did you mean " + s + "?"
	}
	return withCode(exitcode.Usage, fmt.Errorf("unknown command %q%s (see '%s --help')", name, hint, commandPath(c)))
}

// usageError maps flag parsing failures to exitcode.Usage and points at the help
// of the command that failed.
func usageError(c *ucli.Context, err error, _ bool) error {
	return withCode(exitcode.Usage, fmt.Errorf("%w (see '%s --help')", err, commandPath(c)))
}

// commandPath is the command line that reached c, "edge-agent config
// check": the root context's command is named after the program, so the
// program appears once.
func commandPath(c *ucli.Context) string {
	var names []string
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil {
			names = append(names, ctx.Command.Name)
		}
	}
	slices.Reverse(names)
	if len(names) == 0 {
		return "edge-agent"
	}
	return strings.Join(names, " ")
}

func (a *agentCLI) versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "version",
		Usage:     "print version, commit, build date and Go version",
		UsageText: "edge-agent version",
		Description: `Release builds stamp version, commit and date at link time.

Examples:
   edge-agent version
   edge-agent --version`,
		Action: func(c *ucli.Context) error {
			b := a.env.Build
			fmt.Fprintf(a.env.Stdout, "edge-agent %s\ncommit: %s\nbuilt: %s\ngo: %s %s/%s\n",
				orUnknown(b.Version), orUnknown(b.Commit), orUnknown(b.Date),
				runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

func orUnknown(s string) string {
	if strings.TrimSpace(s) == "" {
		return "unknown"
	}
	return s
}
