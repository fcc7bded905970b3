// Package protocol is the EdgeSocket line protocol spoken between an edge
// collector and the Apache SeaTunnel EdgeSocket source: its command and reply
// words, line framing, and the parsing both sides need.
//
// Framing: one UTF-8 message per line. Writers end lines with '\n'; readers
// accept "\n", "\r\n" and a lone "\r", as Java's BufferedReader does. Every
// reader is bounded: a line longer than its limit is an error
// (ErrLineTooLong), never an allocation of that size.
//
// Exchange: the collector sends "__AUTH__:<token>" right after connecting
// (the engine waits about one second) and gets ACK, AUTH_FAILED or REJECTED.
// Then each "__BATCH__:<id>:<payload>" gets exactly one reply line, in
// request order. The package has no state; it holds no connections.
package protocol
