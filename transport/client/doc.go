// Package client is the EdgeSocket collector: it delivers batches to the
// Apache SeaTunnel EdgeSocket source and reports, per batch, whether the
// engine RECEIVED it. A *Client implements transport.Sender.
//
// Concurrency: Send calls are serialised (one session, one exchange at a
// time); Stats, Connected, Probe and Close may be called from any
// goroutine. New does not connect: the first Send does.
//
// Session: dial (optionally TLS), "__AUTH__:<token>" at once (the engine
// waits about a second), and the session is kept between Send calls. ACK
// opens it; AUTH_FAILED returns transport.ErrAuthFailed; REJECTED returns
// transport.ErrRejected after exactly one connect, so a collector shut out
// by another never storms the engine.
//
// Pipelining: lines are written before their replies are read, as many as
// the session's window allows; replies come back one per line, in order.
// The window starts at 64, grows by one per RECEIVED while lines wait for
// room (doubling per round trip), and past 1024 takes the link bound at
// once: twice the measured bandwidth-delay product (the highest rate of
// RECEIVED over a round trip times the session's least round trip), never
// below 1024, never above Config.MaxInFlight. It halves on QUEUE_FULL or
// RETRY, once per episode. MaxInFlight 1 is the Java agent's one-at-a-time
// exchange. Stats.LinkBound and Stats.RoundTrip tell a caller how many
// batches per Send keep the link busy.
//
// Streaming: Stream keeps one call open while its Feed hands over
// segments of batches: a segment taken while replies are owed goes out
// behind them, in the same window, and comes back (Feed.Done) once a
// balanced barrier makes its outcomes final, so over a long link the next
// segment does not wait a round trip for the one before. Not with
// checkpoint delivery.
//
// Replies carry no batch id: a reply settles the oldest unanswered batch,
// and only if that batch's line had been handed to the socket before the
// reply began to be read. Any other reply (unsolicited, surplus, bytes on
// an idle session) drops the session with transport.ErrProtocol, logged at
// ERROR; its unanswered batches are resent on a new one and charged no
// attempt. So a batch reported Received was always on the wire first.
//
// Outcomes: RECEIVED → Received. RETRY → jittered backoff and the same
// line again, counted toward MaxBatchSendAttempts (Failed when they run
// out). QUEUE_FULL:<ms> → not counted; if the engine took rows since its
// previous QUEUE_FULL it is draining: wait a few milliseconds, then send
// at the drain rate measured between QUEUE_FULL episodes (pacer), so its
// queue stays just under its mark; else wait <ms>, at most ReadTimeout,
// then resend. During either wait nothing new is written. DECRYPT_FAILED
// stops the call with transport.ErrDecryptFailed. Any other reply fails
// that batch only.
//
// Failures: a cut, EOF, a peer silent for ReadTimeout while replies are
// owed, or garbage close the session; the client reconnects with jittered
// backoff (InitialBackoff to MaxBackoff) and resends exactly the
// unanswered batches. After MaxReconnectCycles attempts without progress
// the call returns transport.ErrUnavailable: batches that never went out
// are NotSent; batches written to a connection that then failed without
// answering are Failed.
//
// Stopping: every wait and blocking I/O ends when ctx is done or Close
// runs, and the call returns ctx's error or transport.ErrClosed. Batches
// on the wire, unanswered, are then NotSent (no attempt charged); the
// engine may still have taken them, so they may arrive twice.
//
// Probe opens a session the way Send does, reports each step with its
// duration and the engine's verdict, sends no batch and closes.
//
// The token and key never appear in logs or errors.
package client
