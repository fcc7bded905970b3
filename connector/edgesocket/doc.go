// Package edgesocket is the `type: edgesocket` input: edge-agent listens
// for other agents (and any EdgeSocket collector) and becomes a relay,
// many agents → one durable relay → the engine.
//
// It speaks the protocol as the engine does (__AUTH__ → ACK or
// AUTH_FAILED; __BATCH__ → RECEIVED, QUEUE_FULL:<ms>, DECRYPT_FAILED,
// DECODE_FAILED, BAD_REQUEST, INVALID_PARAM; __COMMIT__), for many
// collectors at once, each pipelined, through the transport module's
// relay server (transport/relay), which also bounds what an
// unauthenticated client can hold: see that package for the budget,
// the per-source share, the eviction and the slowing of wrong tokens.
//
// Contract:
//
//   - RECEIVED is written only once the batch is in the relay's queue:
//     the input implements input.Acker, and the scheduler tells it after
//     the transaction that stored the event committed (after its fsync
//     when queue.fsync is on). A sender therefore deletes nothing the
//     relay could lose to a crash. Batches not yet stored when the relay
//     stops or crashes get no reply; their senders resend them, so the
//     relay may store a batch twice: at least once, never lost.
//   - The batches handed over but not yet polled are bounded
//     (max-pending-bytes). At the bound batches wait their turn, first
//     come first served across connections, up to queue-full-retry-ms;
//     then, and while the relay's queue is full (the scheduler then stops
//     polling), they are answered QUEUE_FULL:<queue-full-retry-ms>, so
//     backpressure reaches the senders instead of the relay dropping
//     anything.
//   - __COMMIT__:<id> is answered from the relay's own durability, per
//     connection: ACK:<w> when every batch of the connection up to w was
//     stored, RETRY for an id it never read, PENDING otherwise.
//   - The event is stored byte-identical to what the sender's batch
//     decodes to (in PACKET mode: decrypted and decompressed, whatever
//     compression the sender chose), unless add-fields asks for the
//     token's name or the peer's address to be put into the event JSON.
//   - In PACKET mode with a key, an envelope that is not encrypted is
//     answered DECRYPT_FAILED unless allow-unencrypted is true: the
//     operator configured a key to have events encrypted in transit.
//   - Input positions: none. A relay's input resumes nothing; what was
//     not stored is resent by its senders.
package edgesocket
