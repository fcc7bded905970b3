// Package ingress is the server side of EdgeSocket: a small stand-in for
// the Apache SeaTunnel EdgeSocket source, used by the edgesocket-receiver
// tool, the end-to-end suite's fake engine, and tests.
//
// It behaves as the engine's IngressProtocolHandler does:
//
//   - one collector at a time: while a connection holds the ingress, any
//     other gets "REJECTED" and is closed without being read;
//   - the first line must authenticate within AuthTimeout (1 s, like the
//     engine's accept_timeout_ms): "__AUTH__:<token>", or the bare token;
//     the comparison is constant-time; a wrong token, EOF or timeout gets
//     AUTH_FAILED and the connection is closed;
//   - then each line gets one reply, in order: __BATCH__ lines are parsed
//     like the engine (BAD_REQUEST, INVALID_PARAM), decoded with the
//     configured codec.Decoder (DECRYPT_FAILED when the key is missing or
//     the tag does not verify, DECODE_FAILED for any other decode error)
//     and handed to the Handler, whose answer is the reply (RECEIVED by
//     default); __COMMIT__ goes to the CommitHandler (PENDING by default);
//     a second __AUTH__ or an unknown command gets BAD_REQUEST.
//
// Deliberate differences from the engine:
//
//   - The engine closes its listening socket while a collector is
//     connected, so a second collector sees "connection refused". This
//     package keeps accepting and answers REJECTED, so that tests can
//     observe the policy. A newcomer first waits up to RejectGrace for the
//     ingress to free up, because a collector that drops its connection
//     and redials at once would otherwise race the server noticing the
//     old connection's end.
//   - The engine decompresses after replying RECEIVED, so corrupt
//     compressed data fails its job later; here it gets DECODE_FAILED, as
//     the engine's documentation says it should.
//
// Faults (Config.Faults, or SetFaults at run time) inject the failures a
// collector must survive: cuts, RETRY, QUEUE_FULL, slow replies, and
// AUTH_FAILED / REJECTED / DECRYPT_FAILED on demand.
//
// The Handler is called from one goroutine at a time (there is one
// collector at a time). The record it gets is valid only during the call.
//
// # Multi-collector mode
//
// Config.MaxConnections > 0 turns the stand-in into a server for many
// collectors at once (a relay's listener):
//
//   - up to MaxConnections authenticated collectors; one more gets
//     REJECTED after its token checked out. Connections not yet
//     authenticated have a budget of their own (MaxHandshakes): beyond it
//     a connection is refused on the accept loop, without a goroutine, so
//     a flood of connections costs no memory per attempt;
//   - tokens have names (Config.Tokens); all are compared in constant
//     time; a failure is answered AUTH_FAILED and logged at WARN, at most
//     once per 10 s, without what was presented;
//   - each connection is pipelined: up to MaxInFlight requests are read
//     ahead of their replies, and replies leave in request order; they
//     are written by whoever makes them ready (Ticket.Done, DoneAll, the
//     reader), without blocking, so a connection costs one goroutine; a
//     second one writes only while the collector's socket does not take
//     the replies at once, or under TLS;
//   - a DeferredHandler settles each batch's reply later through its
//     Ticket, so a relay answers RECEIVED only once the batch is durable;
//     __COMMIT__ is then answered from the session's own durability (see
//     commitReply);
//   - timeouts: AuthTimeout for the token line, ReadTimeout for a request
//     line once begun (slow-loris), IdleTimeout while nothing is owed,
//     WriteTimeout for replies (a collector that does not read them is
//     closed: its kernel send buffer is kept small on purpose);
//   - Faults do not apply.
package ingress
