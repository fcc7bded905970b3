// Command edgesocket-receiver is a stand-in for the Apache SeaTunnel
// EdgeSocket source: it listens, checks the token, decodes RAW or PACKET
// payloads and writes each record as one NDJSON line. It is the demo's
// engine, the end-to-end suite's fake engine, and a way for operators to
// test an agent without a SeaTunnel cluster. Fault flags make it cut
// connections, answer RETRY or QUEUE_FULL, or reply slowly. With
// --engine-model it runs the enginemodel package instead: the engine's
// own replies and losses, and only committed rows as output.
//
// Run it with --help for flags and examples.
package main
