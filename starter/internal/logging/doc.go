// Package logging builds the agent's slog handler. Only main (the cli
// package) calls it; every library receives a *slog.Logger and defaults to
// a discard handler when given none.
//
// Where records go:
//   - an agent in the foreground logs to stderr: coloured tint text when
//     stderr is a terminal (an operator running `edge-agent start` by hand),
//     JSON lines otherwise (systemd's journal, containers, pipes), and also
//     to the log file;
//   - `start --background` logs to the log file only; its stderr is
//     edge-agent.out, left for what only the Go runtime writes (a panic).
//
// The file is JSON (log.format: json, the default) or logfmt-style text
// (log.format: text); log.format does not change stderr. Durations are
// written with their unit ("17ms") by every handler, never as nanoseconds.
//
// The log file rotates by size with a retention count and age through
// lumberjack (log.max-size-mb, log.max-backups, log.max-age-days): edge disks
// are small, so an unbounded log is not an option.
package logging
