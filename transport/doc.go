// Package transport holds the types shared by every way edge-agent hands a
// batch to its destination: the EdgeSocket client (package client), the
// console output (package console) and anything a caller writes itself.
//
// A Sender reports, for each batch, whether the engine RECEIVED it, refused
// it (the caller charges an attempt), or never saw it (no attempt charged).
// Errors returned beside the results say why the whole call stopped; use
// errors.Is with the sentinels below to branch on them.
//
// The module is standalone: it imports nothing from the rest of edge-agent,
// so other tools can import it to speak EdgeSocket. Its packages:
//
//   - protocol: command and reply words, bounded line framing, parsing;
//   - codec: RAW and PACKET payloads (gzip/zlib/deflate, AES-256-GCM);
//   - client: the pipelined, reconnecting EdgeSocket collector (a Sender);
//   - backoff: the jittered exponential backoff every retry paces by;
//   - console: a Sender that logs payloads instead of sending them;
//   - ingress: the server side, a stand-in for the SeaTunnel source;
//   - cmd/edgesocket-receiver: a command-line receiver built on ingress.
package transport
