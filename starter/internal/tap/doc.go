// Package tap is the live view of events `edge-agent tap` shows: the
// agent publishes the events of a stage (as read, after processing, as
// the engine received them) and each subscriber gets a sample of them.
//
// Contract:
//
//   - Publishing never blocks and costs one atomic load per event while
//     nobody taps the stage. A subscriber takes at most Rate events a
//     second (a token bucket; the others are counted as sampled out) into
//     a channel of Buffer events; when that is full, because its reader
//     is slow or gone, the event is dropped and counted. The pipeline
//     never waits for a reader.
//   - Payloads are produced lazily (only for an event a subscriber takes)
//     and copied: a subscriber owns what it receives.
//   - Close ends every subscription (its channel is closed); a closed hub
//     takes no new subscriber.
package tap
