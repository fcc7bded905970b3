// Package processing holds the processors an event goes through before
// it is written to the queue: parse, field operations, redact, filter,
// dedup, sample and timestamp, configured as a `processors:` list.
//
// A Chain runs one input's list (its own steps, then the agent's) over the
// events an input returned, in place, on the scheduler's goroutine. It
// keeps the scheduler's contract on positions: an event dropped, folded
// or sampled out becomes a position-only event (nil Payload, same Pos),
// so its input still advances in the same transaction; while dedup holds
// an event, no position read after it is handed on, so a restart never
// skips an event that was held and not yet written. Held events are
// emitted when their window closes (checked at each Process) and by
// Flush, at shutdown and before a reload replaces the chain.
//
// Counters are atomic and may be read from any goroutine (Stats); the
// rest of a Chain is not safe for concurrent use.
package processing
