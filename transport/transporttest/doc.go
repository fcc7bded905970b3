// Package transporttest holds test helpers for code that speaks EdgeSocket:
// a TCP proxy that adds a round-trip time on loopback, so tests and
// benchmarks can show what pipelining buys on a long link without leaving
// the machine, certificates for TLS on loopback (self-signed, a CA and the
// certificates it signs, or a CA with a server and a client certificate for
// mutual TLS), and a bounded poll (Eventually).
package transporttest
