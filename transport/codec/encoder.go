package codec

import (
	"crypto/cipher"
	"fmt"
	"sync"
)

// maxPooledBuf: scratch buffers grown past this are not kept, so one huge
// event does not pin memory for the life of the process.
const maxPooledBuf = 1 << 20

// Encoder builds wire payloads. It is safe for concurrent use; each call
// borrows reusable compressors and buffers from a pool.
type Encoder struct {
	opts Options
	aead cipher.AEAD
	// tail is the constant part of the envelope after the payload, up to
	// the iv value: `","compression":"gzip","encryption":"aes_gcm","iv":`.
	tail string
	pool sync.Pool
}

// envelopeHead opens a PACKET envelope; version 1 is the only one defined.
const envelopeHead = `{"version":1,"payload":"`

// NewEncoder validates opts and prepares the cipher. The key is copied.
func NewEncoder(opts Options) (*Encoder, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("new encoder: %w", err)
	}
	e := &Encoder{opts: opts}
	e.opts.Key = nil // the cipher holds what it needs; keep no extra copy
	if opts.Mode == ModePacket && opts.Encryption != EncryptionNone {
		aead, err := newAEAD(opts.Encryption, opts.Key)
		if err != nil {
			return nil, fmt.Errorf("new encoder: %w", err)
		}
		e.aead = aead
	}
	e.tail = `","compression":"` + opts.Compression.String() +
		`","encryption":"` + opts.Encryption.String() + `","iv":`
	e.pool.New = func() any { return new(compressor) }
	return e, nil
}

// Options returns the encoder's settings, without the key.
func (e *Encoder) Options() Options { return e.opts }

// Encode appends the wire payload for the event raw to dst and returns the
// extended slice. RAW appends raw unchanged; PACKET appends the envelope.
func (e *Encoder) Encode(dst, raw []byte) ([]byte, error) {
	if e.opts.Mode == ModeRaw {
		return append(dst, raw...), nil
	}
	s := e.pool.Get().(*compressor)
	defer e.release(s)

	body := raw
	if e.opts.Compression != CompressionNone {
		var err error
		if body, err = s.compress(e.opts.Compression, e.opts.Level, raw); err != nil {
			return dst, err
		}
	}
	if e.aead != nil {
		// A fresh random IV per packet, as the Java agent does: GCM must
		// never reuse a nonce under one key.
		if err := s.nextIV(); err != nil {
			return dst, fmt.Errorf("encode packet: random iv: %w", err)
		}
		s.seal = e.aead.Seal(s.seal[:0], s.iv[:], body, nil)
		body = s.seal
	}
	dst = append(dst, envelopeHead...)
	dst = appendBase64(dst, body)
	dst = append(dst, e.tail...)
	if e.aead != nil {
		dst = append(dst, '"')
		dst = appendBase64(dst, s.iv[:])
		dst = append(dst, '"', '}')
	} else {
		// Jackson writes a null iv rather than omitting it; so do we.
		dst = append(dst, "null}"...)
	}
	return dst, nil
}

func (e *Encoder) release(s *compressor) {
	if cap(s.out.b) > maxPooledBuf || cap(s.seal) > maxPooledBuf {
		return
	}
	e.pool.Put(s)
}
