// Package standin is test support: a stand-in for the Apache SeaTunnel
// EdgeSocket source, used by the edgesocket-receiver tool, the end-to-end
// suite's fake engine, benchmarks and tests. Shipped binaries other than
// edgesocket-receiver never import it; the relay's production listener is
// transport/relay.
//
// Every line is answered by the engine model (transport/enginemodel): an
// enginemodel.Session over one enginemodel.Source shared by all the
// connections, as the engine's reader outlives them. So auth, request
// parsing, decoding (DECRYPT_FAILED, DECODE_FAILED), RECEIVED and the
// __COMMIT__ answers (PENDING, RETRY for an id not yet received,
// ACK:<watermark> from the floor quirk or a completed checkpoint) follow
// the engine's rules, written once there. The model's downstream is the
// Handler, which takes each record the moment it is accepted
// (enginemodel.SourceConfig.Sink): the stand-in's queue never fills, and
// no checkpoint is taken unless a test takes one on Server.Source.
//
// Around the model, as the engine's IngressProtocolHandler does: one
// collector at a time, and the first line must come within AuthTimeout
// (1 s, like the engine's accept_timeout_ms), else AUTH_FAILED.
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
//     compressed data fails its job later; here, as in the engine model,
//     it gets DECODE_FAILED, as the engine's documentation says it should.
//   - The downstream keeps up with any collector and checkpoints come
//     only when a test takes them, where the engine's job drains at its
//     own pace and checkpoints on a timer (the engine model's Job, and
//     edgesocket-receiver --engine-model, run those).
//
// Faults (Config.Faults, or SetFaults at run time) are a layer on top
// of the model that injects the failures a collector must survive: cuts,
// RETRY, QUEUE_FULL, slow replies, and AUTH_FAILED / REJECTED /
// DECRYPT_FAILED on demand. A batch a fault answers never reaches the
// model.
//
// The Handler is called from one goroutine at a time (there is one
// collector at a time). The record it gets is valid only during the call.
package standin
