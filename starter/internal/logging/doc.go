// Package logging builds the agent's slog handler. Only main (the cli
// package) calls it; every library receives a *slog.Logger and defaults to
// a discard handler when given none.
//
// Where records go:
//   - stderr is a terminal (an operator running `edge-agent start` by hand):
//     coloured tint output on stderr AND the log file;
//   - otherwise (systemd, --background, pipes): the log file only, as JSON
//     (log.format: json, the default) or logfmt-style text (log.format: text).
//
// The log file rotates by size with a retention count and age through
// lumberjack (log.max-size-mb, log.max-backups, log.max-age-days): edge disks
// are small, so an unbounded log is not an option.
package logging
