// Package cli is the edge-agent command line: it parses the arguments,
// resolves the install root and the config path (package paths), and runs
// the command; it maps every outcome to an exit code of package exitcode
// (the table lives there).
//
// The commands: start (foreground, or --background: a detached child that
// reports readiness through a pipe), stop, reload, status, version, config
// check, check output, the db tools (package dbcli), service (Windows;
// elsewhere exit 64), completion and man. The agent process itself is
// package daemon: start hands it what the flags resolved and turns its
// result into the exit code, or re-executes itself on daemon.ErrRestart.
// stop and reload reach a running agent through its pid file: by signal,
// or on Windows by the named events the agent creates.
//
// Contracts:
//   - every command answers a bad flag or a mistyped subcommand alike: one
//     line on stderr naming the nearest command and the --help to read, and
//     exitcode.Usage;
//   - an error is printed once, as "edge-agent: error: …" on stderr, unless
//     the command already reported it;
//   - completion scripts and the manual page are generated from the command
//     tree, so they cannot drift from the flags the binary accepts.
//
// Run is driven entirely by its Env (arguments, environment, standard
// streams, executable path), so tests run commands in-process against temp
// install roots; the build stamps are the only package-level variables.
package cli
