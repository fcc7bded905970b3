package codec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Mode is the payload framing: RAW or PACKET.
type Mode int

// Modes. RAW is the zero value and the default, as in the Java agent.
const (
	ModeRaw Mode = iota
	ModePacket
)

func (m Mode) String() string {
	if m == ModePacket {
		return "PACKET"
	}
	return "RAW"
}

// Compression is the codec applied before encryption in PACKET mode.
type Compression int

// Compressions, written on the wire as none, gzip, zlib and deflate.
const (
	CompressionNone Compression = iota
	CompressionGzip
	CompressionZlib
	CompressionDeflate
)

var compressionNames = [...]string{"none", "gzip", "zlib", "deflate"}

func (c Compression) String() string {
	if c < 0 || int(c) >= len(compressionNames) {
		return fmt.Sprintf("compression(%d)", int(c))
	}
	return compressionNames[c]
}

// Encryption is the AEAD applied after compression in PACKET mode.
type Encryption int

// Encryptions, written on the wire as none, aes_gcm and chacha20_poly1305.
const (
	EncryptionNone Encryption = iota
	EncryptionAESGCM
	// EncryptionChaCha20Poly1305 is NOT understood by the SeaTunnel engine;
	// only receivers built on this package decode it.
	EncryptionChaCha20Poly1305
)

var encryptionNames = [...]string{"none", "aes_gcm", "chacha20_poly1305"}

func (e Encryption) String() string {
	if e < 0 || int(e) >= len(encryptionNames) {
		return fmt.Sprintf("encryption(%d)", int(e))
	}
	return encryptionNames[e]
}

// KeySize is the only accepted key length: AES-256 (and ChaCha20).
const KeySize = 32

// Options configure an Encoder. Compression, Level, Encryption and Key
// are ignored in RAW mode; Key must be KeySize bytes when Encryption is
// set.
type Options struct {
	Mode        Mode
	Compression Compression
	// Level is the compression level, within Compression.Levels: 0
	// stores the event uncompressed in the compression's framing; 1 codes
	// an event of up to 1 KiB with deflate's fixed Huffman code. Any
	// level decodes the same way: the format does not record it, and
	// Java's Inflater reads them all.
	Level      int
	Encryption Encryption
	Key        []byte
}

// DefaultLevel is the compression level of DefaultSettings: the fastest
// that compresses. A PACKET holds one event of a few hundred bytes, which
// level 1 codes as one fixed-Huffman block (fixedflate.go) or stores;
// levels 2-9 build a Huffman table per event, cost several times as much
// as level 1 for a few per cent fewer bytes (BenchmarkEncodeLevel reports
// both).
const DefaultLevel = 1

// Levels returns the compression levels c accepts, lo..hi; ok is false
// when c has no levels (none). The zlib family takes 0 (store) to 9
// (smallest), as java.util.zip.Deflater does.
func (c Compression) Levels() (lo, hi int, ok bool) {
	switch c {
	case CompressionGzip, CompressionZlib, CompressionDeflate:
		return 0, 9, true
	}
	return 0, 0, false
}

// checkLevel reports a level c does not accept. Any level passes with no
// compression: there is nothing to tune.
func checkLevel(c Compression, level int) error {
	lo, hi, ok := c.Levels()
	if !ok || (level >= lo && level <= hi) {
		return nil
	}
	return fmt.Errorf("%w: %s takes %d (store) to %d (smallest), got %d", ErrBadLevel, c, lo, hi, level)
}

// ParseMode reads "raw" or "packet", in any case.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "raw":
		return ModeRaw, nil
	case "packet":
		return ModePacket, nil
	}
	return 0, fmt.Errorf("unknown packet mode %q (want raw or packet)", s)
}

// ParseCompression reads none, gzip, zlib or deflate, in any case; ""
// means none.
func ParseCompression(s string) (Compression, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" {
		return CompressionNone, nil
	}
	for i, n := range compressionNames {
		if v == n {
			return Compression(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (want none, gzip, zlib or deflate)", ErrUnknownCompression, s)
}

// ParseEncryption reads none, aes_gcm or chacha20_poly1305, in any case;
// "" means none.
func ParseEncryption(s string) (Encryption, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" {
		return EncryptionNone, nil
	}
	for i, n := range encryptionNames {
		if v == n {
			return Encryption(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (want none, aes_gcm or chacha20_poly1305)", ErrUnknownEncryption, s)
}

// Errors of DecodeKey, for callers that word their own message.
var (
	ErrKeyNotBase64 = errors.New("is not valid base64 (generate a key with: openssl rand -base64 32)")
	ErrKeySize      = fmt.Errorf("must base64-decode to exactly %d bytes (a 256-bit key; openssl rand -base64 32)", KeySize)
)

// DecodeKey is the one decoder of a configured key, used by the agent's
// config check and its encoder alike, so the two can never disagree. It
// takes standard base64 with or without padding, as Java's Base64 decoder
// does (`openssl rand -base64 32 | tr -d =` gives 43 characters), and
// requires exactly KeySize bytes. Errors never quote the key.
func DecodeKey(b64 string) ([]byte, error) {
	s := strings.TrimSpace(b64)
	if s == "" {
		return nil, fmt.Errorf("key is empty: it %w", ErrKeySize)
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, fmt.Errorf("key of %d characters %w", len(s), ErrKeyNotBase64)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("key %w, got %d bytes", ErrKeySize, len(key))
	}
	return key, nil
}

// Validate checks that the options can build an Encoder.
func (o Options) Validate() error {
	if o.Mode != ModeRaw && o.Mode != ModePacket {
		return fmt.Errorf("unknown packet mode %d", int(o.Mode))
	}
	if o.Mode == ModeRaw {
		return nil
	}
	if o.Compression < 0 || int(o.Compression) >= len(compressionNames) {
		return fmt.Errorf("%w %d", ErrUnknownCompression, int(o.Compression))
	}
	if err := checkLevel(o.Compression, o.Level); err != nil {
		return err
	}
	if o.Encryption < 0 || int(o.Encryption) >= len(encryptionNames) {
		return fmt.Errorf("%w %d", ErrUnknownEncryption, int(o.Encryption))
	}
	if o.Encryption != EncryptionNone && len(o.Key) != KeySize {
		return fmt.Errorf("encryption %s needs a key of exactly %d bytes, got %d", o.Encryption, KeySize, len(o.Key))
	}
	return nil
}
