// Package execin is the `type: exec` input: it runs a command, kept
// running (restarted with backoff when it exits) or on a schedule
// (interval-ms), and stores each line of its stdout as one event.
//
// Contract:
//
//   - The command is started and stopped by its PID only (SIGTERM, then
//     SIGKILL after stop-grace-ms); nothing is killed by name.
//   - Its stdout goes through a queue bounded in bytes
//     (max-pending-bytes): when full the input stops reading, the pipe
//     fills and the command blocks writing: backpressure, nothing dropped.
//   - Exit codes are logged (INFO for 0, WARN otherwise) and counted;
//     stderr lines are logged at WARN (cut, rate-limited) and counted,
//     not stored as events.
//   - No position: a crash loses the lines read and not yet in the WAL.
//     A stop (Drain) stores every line read.
package execin
