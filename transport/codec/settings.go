package codec

import (
	"errors"
	"strings"

	"github.com/edge-agent/edge-agent/transport"
)

// UnmarshalText reads RAW or PACKET in any case, so a config decoder takes
// the mode through ParseMode. A blank value means the default, RAW, as a
// blank compression or encryption means none.
func (m *Mode) UnmarshalText(b []byte) error {
	if strings.TrimSpace(string(b)) == "" {
		*m = ModeRaw
		return nil
	}
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// UnmarshalText reads a compression name through ParseCompression.
func (c *Compression) UnmarshalText(b []byte) error {
	v, err := ParseCompression(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// UnmarshalText reads an encryption name through ParseEncryption.
func (e *Encryption) UnmarshalText(b []byte) error {
	v, err := ParseEncryption(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// Settings are the codec's options as an agent.yaml writes them
// (output.packet-mode, compression, compression-level, encryption,
// aes-secret-key-base64):
// the key stays base64 text until Options, so a secret read from elsewhere
// can replace it after decoding and RAW never decodes it.
type Settings struct {
	Mode        Mode        `yaml:"packet-mode"`
	Compression Compression `yaml:"compression"`
	// Level is within Compression.Levels; ignored without compression.
	Level      int        `yaml:"compression-level"`
	Encryption Encryption `yaml:"encryption"`
	KeyBase64  string     `yaml:"aes-secret-key-base64"`
}

// DefaultSettings are the Java agent's: RAW, and gzip once PACKET is
// chosen, unencrypted; the level is DefaultLevel, the fastest (the Java
// agent uses zlib's default, 6: the engine decodes either).
func DefaultSettings() Settings {
	return Settings{Mode: ModeRaw, Compression: CompressionGzip, Level: DefaultLevel, Encryption: EncryptionNone}
}

// Validate is the one check of the settings. RAW ignores compression,
// encryption and the key (Java parity: a RAW config with a stale key still
// runs). Each problem is a *transport.FieldError naming its key; messages
// never quote the key.
func (s Settings) Validate() error {
	_, err := s.Options()
	return err
}

// Options checks the settings and decodes the key: what passes is exactly
// what NewEncoder accepts.
func (s Settings) Options() (Options, error) {
	switch s.Mode {
	case ModeRaw:
		return Options{Mode: ModeRaw}, nil
	case ModePacket:
	default:
		return Options{}, transport.Errorf("packet-mode", "unknown packet mode %d (want RAW or PACKET)", int(s.Mode))
	}
	o := Options{Mode: s.Mode, Compression: s.Compression, Encryption: s.Encryption}
	var errs []error
	if s.Compression < 0 || int(s.Compression) >= len(compressionNames) {
		errs = append(errs, &transport.FieldError{Key: "compression", Err: ErrUnknownCompression})
	} else if err := checkLevel(s.Compression, s.Level); err != nil {
		errs = append(errs, &transport.FieldError{Key: "compression-level", Err: err})
	} else if _, _, ok := s.Compression.Levels(); ok {
		o.Level = s.Level
	}
	switch {
	case s.Encryption < 0 || int(s.Encryption) >= len(encryptionNames):
		errs = append(errs, &transport.FieldError{Key: "encryption", Err: ErrUnknownEncryption})
	case s.Encryption == EncryptionNone:
	case strings.TrimSpace(s.KeyBase64) == "":
		errs = append(errs, transport.Errorf("aes-secret-key-base64", "required when encryption is %q", s.Encryption.String()))
	default:
		key, err := DecodeKey(s.KeyBase64)
		if err != nil {
			errs = append(errs, &transport.FieldError{Key: "aes-secret-key-base64", Err: err})
		}
		o.Key = key
	}
	if len(errs) > 0 {
		return Options{}, errors.Join(errs...)
	}
	return o, nil
}
