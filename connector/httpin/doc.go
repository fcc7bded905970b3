// Package httpin is the `type: http` input: an HTTP listener taking
// POSTs of NDJSON, a JSON array, one JSON object, or plain lines, plain
// or gzip or zstd compressed.
//
// Contract:
//
//   - 200 is answered only once every record of the request is committed
//     to the WAL (input.Acker's Committed, through connector/internal/pushq).
//     A request not answered 200 may or may not have been stored: the
//     sender sends it again (at least once, duplicates possible).
//   - A request is all or nothing: a bad record (not JSON, not an object,
//     not UTF-8) makes a 400 naming the line of the first one, and no
//     record of the request is kept.
//   - Backpressure: a request that does not fit the queue
//     (max-pending-bytes), or finds max-concurrent-requests requests
//     already in progress, is answered 429 with Retry-After; nothing is
//     dropped silently.
//   - Bounded: connections (max-connections; more wait in the kernel's
//     backlog), requests in progress, the body (max-body-bytes, on the
//     wire and decompressed: 413 over it) and each phase of a request
//     (read-header, read, write, idle timeouts).
//   - Input positions: none. The senders resend what was not answered.
package httpin
