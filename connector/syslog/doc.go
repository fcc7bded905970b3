// Package syslog is the `type: syslog` input: one listener (UDP, TCP or
// TLS) per input entry, receiving RFC 5424 and RFC 3164 messages and
// turning each into an event whose JSON holds the parsed fields and, by
// default, the message as received.
//
// Streams are framed by RFC 6587, octet counting or LF, chosen by the
// first byte of each connection. Reader goroutines (one per connection,
// one for UDP) parse and encode messages and put them in a queue bounded
// in bytes (queue-bytes); Poll drains it without waiting and the Waker
// tells the scheduler when it holds something.
//
// What the input promises, and what it cannot:
//
//   - TCP/TLS: when the queue is full the connection's reader stops
//     reading, so the sender's socket buffers fill and the sender waits:
//     nothing is dropped while the agent runs. A graceful stop (Drain)
//     hands over every message read. Syslog has no acknowledgements: the
//     sender counts a message delivered once the kernel took it, so a
//     crash (kill -9, power loss) loses what was read or buffered by the
//     kernel but not yet in the WAL: at most queue-bytes in the queue, the
//     Poll batch being written, and the socket buffers. The sender does
//     not know and does not resend. A reload that rebuilds the input
//     drains it the same way before its successor binds the address; an
//     input polled again after Drain (the reload failed) listens again.
//   - UDP: the socket reader never waits. A datagram that finds the queue
//     full is dropped and counted (Stats.DroppedQueueFull); the kernel
//     drops datagrams when its socket buffer overflows, counted from the
//     count it stamps on the next datagram (Stats.DroppedReceiveBuffer,
//     Linux). A crash loses the queue and the socket buffer.
//   - Positions: none; what was received is in the WAL before anything
//     about it is acknowledged downstream.
//   - Bad input never stops the input: a message that does not parse is
//     delivered raw with "parse_error"; a message longer than
//     max-message-bytes is cut (LF framing, UDP) and counted; an octet
//     count above it, or a malformed one, closes that connection with a
//     WARN naming the peer and the reason. Invalid UTF-8 becomes U+FFFD in
//     the event JSON, counted as for files. With strict, a message that is
//     not well-formed is dropped and counted instead.
//   - Senders cannot lock each other out: a TCP/TLS connection that has
//     not sent its first byte of data (after the TLS handshake) has a
//     short deadline and is evicted, oldest first, for a newcomer when the
//     budget (max-connections, max-connections-per-source) is full; see
//     budget. Refused client certificates slow their source down
//     (penalty); WARN lines about bad senders are limited per kind
//     (logLimiter), never one per connection.
package syslog
