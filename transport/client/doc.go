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
// Pipelining: batch lines are written before their replies are read, as
// many as the session's window allows; replies come back one per request,
// in order. The window starts at 64 lines, grows while lines wait for room
// in it (one more per RECEIVED: doubling per round trip, like TCP's slow
// start) up to Config.MaxInFlight, and halves on QUEUE_FULL or RETRY (the
// engine's queue is full), once per episode: one __BATCH__ carries one event, so the window must cover the
// link's bandwidth-delay product for a long round trip not to set the
// rate. MaxInFlight 1 is exactly the Java agent's one-at-a-time exchange.
//
// Reply matching: replies carry no batch id, so a reply settles the oldest
// unanswered batch, and only if that batch's line had been handed to the
// socket before the reply began to be read (the engine cannot answer what
// it has not received). A reply that fails this test answers nothing: it
// is unsolicited (e.g. a RECEIVED right after ACK) or surplus (a line
// answered twice, replies replayed after a reconnect). So are bytes
// buffered right after ACK and bytes found on an idle session. The client
// then drops the session with transport.ErrProtocol, settles nothing more
// from it, logs an ERROR naming the misbehaviour and resends the batches
// the session left unanswered on a new one. Those batches are not charged
// an attempt: the violation is the engine's, not the rows'; were they
// charged, a misbehaving engine would soon make them DEAD. If every
// session misbehaves, the call ends with transport.ErrUnavailable
// (wrapping ErrProtocol) and they are NotSent. The check is causal, so it
// cannot catch a surplus reply that arrives after the next batch was sent:
// that one is matched, and the reply it displaces is caught instead. A
// batch reported Received has therefore always been handed to the socket
// before its reply arrived, never left in a buffer.
//
// Replies: RECEIVED → Received. RETRY → jittered exponential backoff, then
// the same line again; it counts toward MaxBatchSendAttempts and the batch
// is Failed when they run out. QUEUE_FULL:<ms> → wait <ms>, but at most
// ReadTimeout (the engine may ask for 10 minutes, and the connection can
// die unnoticed meanwhile), then resend, not counted. While a RETRY or
// QUEUE_FULL wait runs nothing new is written, because both mean the
// engine's queue is full. After such a wait, with nothing owed, the
// connection is checked first (no round trip): if the engine closed it
// the client reconnects instead of writing onto it. DECRYPT_FAILED stops the
// call with transport.ErrDecryptFailed. Any other reply (DECODE_FAILED,
// BAD_REQUEST, INVALID_PARAM, PENDING, unknown) fails that batch only.
//
// Failures: a cut connection, EOF, a peer silent for ReadTimeout while
// replies are owed, or garbage replies close the session; the client
// reconnects with jittered exponential backoff (InitialBackoff up to
// MaxBackoff), re-authenticates and resends exactly the unanswered
// batches. After MaxReconnectCycles connect attempts without progress the
// call returns transport.ErrUnavailable: batches that never went out are
// NotSent (no attempt charged); batches whose line reached the socket of
// a connection that then failed without answering are Failed.
//
// Stopping: every wait and blocking I/O ends when ctx is done or Close
// runs; the call returns ctx's error or transport.ErrClosed. Batches that
// were on the wire, unanswered, when the caller stopped are NotSent, not
// Failed: a graceful stop is not the rows' fault and charges no attempt.
// The engine may still have taken them, so they may arrive twice.
//
// Probe: Client.Probe opens a session the way Send does (resolve, connect,
// TLS, __AUTH__), reports each step with its duration and the engine's
// verdict, sends no batch and closes. `edge-agent check output` runs it.
//
// The token and key never appear in logs or errors.
package client
