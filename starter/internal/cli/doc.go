// Package cli is the edge-agent command line: start (foreground or
// --background), stop, reload (SIGHUP: re-read and apply the config
// without a restart), status, version, config check, check output (a
// handshake with the engine through the output's own client), the db
// tools, on Windows service (install, start, stop and remove the Windows
// service; elsewhere it exits 64), and completion (bash, zsh, fish) and
// man, which print a shell completion script and the manual page generated
// from the command tree itself, so neither can drift from the flags the
// binary accepts.
//
// What signals do on unix, named events do on Windows (control_windows.go):
// another process cannot send SIGTERM or SIGHUP there.
//
// It is the only place that touches the process as a whole: it builds the
// logger (package logging), owns the pid file and signals (package process),
// resolves the install root and every relative path against it (package
// paths), and maps errors to the exit codes of package exitcode (the
// table lives there, once).
//
// Every command, the db tools included, answers a bad flag or a mistyped
// subcommand alike: one line on stderr naming the nearest command and the
// --help to read, and exitcode.Usage.
//
// Run is driven entirely by its Env (arguments, environment, standard
// streams, executable path), so tests run commands in-process against temp
// install roots without touching the real environment.
package cli
