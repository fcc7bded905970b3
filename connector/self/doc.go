// Package self is the `type: self` input: the agent's own log records,
// shipped through its own WAL like the events of any other input.
//
// Contract:
//
//   - The agent's logger is built around a Hub (Hub.Handler wraps the
//     handlers that write stderr and the log file). Every record at or
//     above a sink's level is encoded as one event, a JSON object with
//     time, level, msg, component and attrs, and offered to the sinks
//     attached: the self input, and whatever else ships own logs.
//   - Logging never waits for a sink: each holds a queue bounded in bytes
//     and a record that does not fit is dropped and counted
//     (dropped_queue_full), never logged about.
//   - Loop protection: a logger passed through Unshipped (its handler's
//     WithoutOwnLogs) still writes stderr and the log file, but its
//     records reach no sink. The self input's own logger is one; the
//     agent hands the one of its delivery path (output and sender)
//     through it, so a failure to deliver, own logs included, is never
//     turned into more own logs to deliver. The mark lives in the
//     handler, not in a goroutine or a context: every logger derived
//     from an unshipped one (With, WithGroup) stays unshipped.
//   - Records logged before a self input opens are not kept: the input
//     ships what is logged while it runs.
//   - No position and no acknowledgement exist: a crash or a stop loses
//     the records not yet in the WAL (Drain stores those queued).
package self
