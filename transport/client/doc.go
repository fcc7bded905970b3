// Package client is the EdgeSocket collector: it delivers batches to the
// Apache SeaTunnel EdgeSocket source and reports, per batch, whether the
// engine RECEIVED it. A *Client implements transport.Sender.
//
// Session: the client dials (optionally over TLS), sends "__AUTH__:<token>"
// at once (the engine waits only about a second) and keeps the
// authenticated connection between Send calls. Auth replies: ACK opens the
// session; AUTH_FAILED returns transport.ErrAuthFailed; REJECTED returns
// transport.ErrRejected after exactly one connect, so a collector that
// another one shuts out never storms the engine; anything else is a
// connection failure.
//
// Pipelining: up to Config.MaxInFlight batch lines are written before their
// replies are read; replies come back one per request, in order.
// MaxInFlight 1 is exactly the Java agent's one-at-a-time exchange.
//
// Replies: RECEIVED → Received. RETRY → jittered exponential backoff, then
// the same line again; it counts toward MaxBatchSendAttempts and the batch
// is Failed when they run out. QUEUE_FULL:<ms> → wait, resend, not
// counted. While a RETRY or QUEUE_FULL wait runs nothing new is written,
// because both mean the engine's queue is full. DECRYPT_FAILED stops the
// call with transport.ErrDecryptFailed. Any other reply (DECODE_FAILED,
// BAD_REQUEST, INVALID_PARAM, PENDING, unknown) fails that batch only.
//
// Failures: a cut connection, EOF, a peer silent for ReadTimeout while
// replies are owed, or garbage replies close the session; the client
// reconnects with jittered exponential backoff (InitialBackoff up to
// MaxBackoff), re-authenticates and resends exactly the unanswered
// batches. After MaxReconnectCycles connect attempts without progress the
// call returns transport.ErrUnavailable: batches that never went out are
// NotSent (no attempt charged); batches written but never answered are
// Failed. Every wait and blocking I/O ends when ctx is done or Close runs.
//
// The token and key never appear in logs or errors.
package client
