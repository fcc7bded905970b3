// Package codec turns an event into the payload of an EdgeSocket __BATCH__
// line and back, byte-compatible with the Apache SeaTunnel EdgeSocket source.
//
// RAW: the payload is the event bytes as they are.
//
// PACKET: the payload is the JSON envelope the Java agent emits, fields in
// this order:
//
//	{"version":1,"payload":"<std base64, padded>","compression":"gzip","encryption":"aes_gcm","iv":"<base64>"}
//
// with "iv":null when the packet is not encrypted. The event is compressed
// first (gzip RFC 1952, zlib RFC 1950 or raw deflate RFC 1951), then sealed
// with AES-256-GCM: a fresh random 12-byte IV per packet (read from
// crypto/rand 32 IVs at a time, each used once), the 16-byte tag
// appended to the ciphertext, no associated data. The key is 32 raw bytes,
// given in base64 (DecodeKey); there is no key derivation.
//
// Compression level 1, the default, writes an event of up to 1 KiB as one
// deflate block in the fixed Huffman code (fixedflate.go): no table to
// build or send, which is most of the cost of compressing one small event.
// On text it searches for repeats only where spaces and punctuation
// start, which finds about as much in log lines as searching every
// position with a quarter of the probes. After an event whose block came
// out less than an eighth smaller than storing it, the next 15 are stored
// without a search (a single log line of a few hundred bytes shrinks
// ~5 %, for most of the encoding's CPU), and the 16th is searched again.
// On amd64 the delimiters are found
// 16 bytes per step with SSE2 and every byte's literal code is computed 16
// per step with SSSE3 (fixedflate_amd64.s), so that each run of literals
// between matches is a shifted copy; elsewhere Go loops write the same
// bytes. Larger events and the other levels go through klauspost/compress.
// Every level is a standard stream; decoding does not depend on it.
//
// The payload's base64 is encoded 12 bytes to 16 characters per step with
// SSSE3 on amd64 (base64_amd64.s, chosen at init from golang.org/x/sys/cpu)
// and 6 bytes per step in Go elsewhere; both give exactly what
// encoding/base64's StdEncoding gives.
//
// ChaCha20-Poly1305 ("chacha20_poly1305") is an extra for edge CPUs without
// AES instructions. The SeaTunnel engine does NOT understand it: use it
// only with a receiver built on this package.
//
// An Encoder and a Decoder are safe for concurrent use. Decode errors are
// typed (see errors.go) so an ingress can choose DECRYPT_FAILED or
// DECODE_FAILED, and decompression is bounded so a small packet cannot
// expand into an unbounded allocation.
package codec
