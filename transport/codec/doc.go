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
// with AES-256-GCM: a fresh random 12-byte IV per packet from crypto/rand,
// never reused, the 16-byte tag appended to the ciphertext, no associated
// data. The key is 32 raw bytes, given in base64 (DecodeKey); there is no
// key derivation.
//
// Every compression level writes one standard stream per packet, which
// any inflater (the JVM's included) reads; decoding does not depend on
// the level. Level 1, the default, writes an event of up to 1 KiB as one
// fixed-Huffman deflate block, or stores it when a search would not pay:
// after an event that shrank by less than an eighth the next 15 are
// stored unsearched. Larger events and the other levels go through
// klauspost/compress.
//
// ChaCha20-Poly1305 ("chacha20_poly1305") is an extra for edge CPUs without
// AES instructions. The SeaTunnel engine does NOT understand it: use it
// only with a receiver built on this package.
//
// An Encoder and a Decoder are safe for concurrent use; encoding makes no
// allocation per event. Decode errors are typed (see errors.go) so an
// ingress can choose DECRYPT_FAILED or DECODE_FAILED, and decompression is
// bounded so a small packet cannot expand into an unbounded allocation.
// The package is pure Go.
package codec
