// Package transporttest holds test helpers for code that speaks EdgeSocket:
// a TCP proxy that adds a round-trip time on loopback, so tests and
// benchmarks can show what pipelining buys on a long link without leaving
// the machine, and certificates for TLS on loopback (self-signed, or a CA
// and the certificates it signs).
package transporttest
