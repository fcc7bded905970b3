package codec

import (
	"bytes"
	"crypto/cipher"
	"encoding/base64"
	"fmt"
	"sync"
)

// DefaultMaxDecodedSize bounds what one packet may decompress to.
const DefaultMaxDecodedSize = 16 << 20

// Decoder turns wire payloads back into events, as the engine does. It is
// safe for concurrent use.
type Decoder struct {
	mode    Mode
	aes     cipher.AEAD // nil without a key
	chacha  cipher.AEAD // nil without a key
	maxSize int
	// encrypted: refuse packets that are not encrypted.
	encrypted bool
	pool      sync.Pool
}

// DecoderOption tunes a Decoder.
type DecoderOption func(*Decoder)

// WithMaxDecodedSize sets the largest event a packet may decompress to
// (default DefaultMaxDecodedSize); larger ones fail with ErrTooLarge.
func WithMaxDecodedSize(n int) DecoderOption {
	return func(d *Decoder) {
		if n > 0 {
			d.maxSize = n
		}
	}
}

// WithEncryptionRequired makes Decode refuse a PACKET envelope that is not
// encrypted (ErrNotEncrypted): a receiver configured with a key expects
// its senders to use it. RAW mode is unaffected.
func WithEncryptionRequired() DecoderOption {
	return func(d *Decoder) { d.encrypted = true }
}

// NewDecoder returns a decoder for mode. key may be nil: encrypted packets
// then fail with ErrKeyMissing (DECRYPT_FAILED, as in the engine). A
// non-nil key must be KeySize bytes. RAW mode ignores the key, as the
// engine does.
func NewDecoder(mode Mode, key []byte, opts ...DecoderOption) (*Decoder, error) {
	if mode != ModeRaw && mode != ModePacket {
		return nil, fmt.Errorf("new decoder: unknown packet mode %d", int(mode))
	}
	d := &Decoder{mode: mode, maxSize: DefaultMaxDecodedSize}
	for _, o := range opts {
		o(d)
	}
	if mode == ModePacket && key != nil {
		var err error
		if d.aes, err = newAEAD(EncryptionAESGCM, key); err != nil {
			return nil, fmt.Errorf("new decoder: %w", err)
		}
		if d.chacha, err = newAEAD(EncryptionChaCha20Poly1305, key); err != nil {
			return nil, fmt.Errorf("new decoder: %w", err)
		}
	}
	d.pool.New = func() any { return new(decompressor) }
	return d, nil
}

// Mode is the decoder's packet mode.
func (d *Decoder) Mode() Mode { return d.mode }

// Decode returns the event carried by payload. In RAW mode that is payload
// itself (not a copy); in PACKET mode a fresh slice. Names of compression
// and encryption are case-insensitive and blank means none, as in the
// engine. Errors wrap the sentinels in errors.go.
func (d *Decoder) Decode(payload []byte) ([]byte, error) {
	if d.mode == ModeRaw {
		return payload, nil
	}
	env, err := parseEnvelope(payload)
	if err != nil {
		return nil, err
	}
	if !env.hasPayload {
		return nil, fmt.Errorf("%w: no \"payload\" field", ErrMalformed)
	}
	// string(...) in a call that keeps no reference does not allocate.
	// The errors say how long the unknown name is, not what it is: the
	// packet is the client's, and decode errors reach status and logs.
	comp, err := ParseCompression(string(env.compression))
	if err != nil {
		return nil, fmt.Errorf("%w: a name of %d bytes (want none, gzip, zlib or deflate)", ErrUnknownCompression, len(env.compression))
	}
	enc, err := ParseEncryption(string(env.encryption))
	if err != nil {
		return nil, fmt.Errorf("%w: a name of %d bytes (want none, aes_gcm or chacha20_poly1305)", ErrUnknownEncryption, len(env.encryption))
	}
	body, err := decodeBase64(nil, env.payload)
	if err != nil {
		return nil, fmt.Errorf("%w: payload is not base64: %v", ErrMalformed, err)
	}
	if enc == EncryptionNone && d.encrypted {
		return nil, ErrNotEncrypted
	}
	if enc != EncryptionNone {
		if body, err = d.open(enc, env, body); err != nil {
			return nil, err
		}
	}
	if comp == CompressionNone {
		return body, nil
	}
	dc := d.pool.Get().(*decompressor)
	out, err := dc.decompress(comp, body, d.maxSize)
	if dc.out.Cap() <= maxPooledBuf {
		d.pool.Put(dc)
	}
	return out, err
}

// open authenticates and decrypts body in place.
func (d *Decoder) open(enc Encryption, env fields, body []byte) ([]byte, error) {
	aead := d.aes
	if enc == EncryptionChaCha20Poly1305 {
		aead = d.chacha
	}
	if aead == nil {
		return nil, fmt.Errorf("%s packet: %w", enc, ErrKeyMissing)
	}
	if !env.hasIV || len(bytes.TrimSpace(env.iv)) == 0 {
		return nil, fmt.Errorf("%s packet: %w: iv is missing", enc, ErrBadIV)
	}
	var buf [ivSize]byte
	iv, err := decodeBase64(buf[:0], env.iv)
	if err != nil {
		return nil, fmt.Errorf("%s packet: %w: iv is not base64", enc, ErrBadIV)
	}
	if len(iv) != aead.NonceSize() {
		return nil, fmt.Errorf("%s packet: %w: iv is %d bytes, want %d", enc, ErrBadIV, len(iv), aead.NonceSize())
	}
	plain, err := aead.Open(body[:0], iv, body, nil)
	if err != nil {
		return nil, fmt.Errorf("%s packet: %w", enc, ErrDecrypt)
	}
	return plain, nil
}

// decodeBase64 appends src decoded to dst[:0], in dst's room when it
// fits; it accepts standard base64 with or without padding, as Java's
// Base64.getDecoder does.
func decodeBase64(dst, src []byte) ([]byte, error) {
	src = bytes.TrimRight(src, "=")
	n := base64.RawStdEncoding.DecodedLen(len(src))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	n, err := base64.RawStdEncoding.Decode(dst[:n], src)
	if err != nil {
		return nil, err
	}
	return dst[:n], nil
}
