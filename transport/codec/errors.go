package codec

import "errors"

// Errors returned by Decode (wrapped with detail) and by the parse funcs.
// Use errors.Is to branch on them; IsDecryptError groups the ones the
// engine answers with DECRYPT_FAILED.
var (
	// ErrMalformed: the envelope is not the expected JSON object (garbage,
	// truncated, not base64, no payload).
	ErrMalformed = errors.New("malformed packet")
	// ErrUnknownCompression: a compression name outside none, gzip, zlib,
	// deflate.
	ErrUnknownCompression = errors.New("unknown compression")
	// ErrBadLevel: a compression level outside what the compression
	// accepts (Compression.Levels).
	ErrBadLevel = errors.New("compression level out of range")
	// ErrUnknownEncryption: an encryption name outside none, aes_gcm,
	// chacha20_poly1305.
	ErrUnknownEncryption = errors.New("unknown encryption")
	// ErrKeyMissing: the packet is encrypted but the decoder has no key.
	ErrKeyMissing = errors.New("packet is encrypted but no key is configured")
	// ErrDecrypt: the authentication tag did not verify: the key differs
	// from the sender's, or the packet was altered.
	ErrDecrypt = errors.New("decryption failed: wrong key or tampered packet")
	// ErrNotEncrypted: a packet with encryption none, refused by a
	// decoder made WithEncryptionRequired.
	ErrNotEncrypted = errors.New("packet is not encrypted and this receiver requires encryption")
	// ErrBadIV: an encrypted packet whose iv is missing, not base64, or not
	// 12 bytes long.
	ErrBadIV = errors.New("bad iv")
	// ErrCorrupt: the compressed body does not decompress.
	ErrCorrupt = errors.New("corrupt compressed data")
	// ErrTooLarge: the body decompresses to more than the decoder's limit.
	ErrTooLarge = errors.New("decompressed payload exceeds the limit")
)

// IsDecryptError reports whether err means the receiver and the sender
// disagree on encryption (ErrKeyMissing, ErrDecrypt, ErrNotEncrypted). The
// EdgeSocket engine replies DECRYPT_FAILED to the first two and
// DECODE_FAILED to every other decode error; a relay requiring encryption
// answers DECRYPT_FAILED to the third as well, since it is the same
// configuration mismatch.
func IsDecryptError(err error) bool {
	return errors.Is(err, ErrDecrypt) || errors.Is(err, ErrKeyMissing) || errors.Is(err, ErrNotEncrypted)
}
