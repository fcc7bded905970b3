// Package pushq holds what a push input (mqtt, http, stdin, exec) took
// from its senders until the scheduler polls it, and tells each sender
// once what it sent is committed.
//
// Contract:
//
//   - A unit (one MQTT message, one HTTP request) is one or more events
//     put all at once or not at all; its done func runs on the
//     scheduler's goroutine, from Committed, once its last event is
//     committed (the events before it were committed by then: commits
//     follow Poll order). done must not block.
//   - The queue is bounded in bytes (each event costs its payload and
//     ItemOverhead): a unit that does not fit waits (Put) or is refused
//     (TryPut). An empty queue takes any one unit, so a unit larger than
//     the bound is not refused for ever; callers bound their units.
//   - Units never committed (the agent stopped or crashed first) never
//     run done: their senders hear nothing and resend.
package pushq
