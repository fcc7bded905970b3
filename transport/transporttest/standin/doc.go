// Package standin is test support: a stand-in for the Apache SeaTunnel
// EdgeSocket source, used by the edgesocket-receiver tool, the end-to-end
// suite's fake engine, benchmarks and tests. Shipped binaries other than
// edgesocket-receiver never import it; the relay's production listener is
// transport/relay.
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
// AUTH_FAILED / REJECTED / DECRYPT_FAILED on demand. The engine's rules
// for the auth line, unparsable requests and undecodable payloads are
// transport/enginemodel's (Authenticates, RequestReply, DecodeReply), the
// one place they are written; the faults are layered on top. The replies
// that depend on the engine's queue and checkpoints (QUEUE_FULL from
// backpressure, ACK watermarks) are the model's alone: here the Handler
// and CommitHandler choose them.
//
// The Handler is called from one goroutine at a time (there is one
// collector at a time). The record it gets is valid only during the call.
package standin
