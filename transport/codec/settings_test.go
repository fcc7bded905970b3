package codec

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/transport"
)

func TestUnmarshalText(t *testing.T) {
	modes := []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"RAW", ModeRaw, true}, {"raw", ModeRaw, true}, {" Packet ", ModePacket, true},
		{"", ModeRaw, true}, {"  ", ModeRaw, true}, {"udp", 0, false}, {"json", 0, false},
	}
	for _, tt := range modes {
		m := Mode(-1)
		err := m.UnmarshalText([]byte(tt.in))
		if tt.ok && (err != nil || m != tt.want) || !tt.ok && (err == nil || !strings.Contains(err.Error(), `"`+tt.in+`"`)) {
			t.Errorf("Mode.UnmarshalText(%q) = %v, %v", tt.in, m, err)
		}
	}
	comps := []struct {
		in   string
		want Compression
		ok   bool
	}{
		{"", CompressionNone, true}, {"none", CompressionNone, true}, {"GZIP", CompressionGzip, true},
		{"zlib", CompressionZlib, true}, {" Deflate", CompressionDeflate, true}, {"zstd", 0, false},
	}
	for _, tt := range comps {
		c := Compression(-1)
		err := c.UnmarshalText([]byte(tt.in))
		if tt.ok && (err != nil || c != tt.want) || !tt.ok && !errors.Is(err, ErrUnknownCompression) {
			t.Errorf("Compression.UnmarshalText(%q) = %v, %v", tt.in, c, err)
		}
	}
	encs := []struct {
		in   string
		want Encryption
		ok   bool
	}{
		{"", EncryptionNone, true}, {"NONE", EncryptionNone, true}, {"aes_gcm", EncryptionAESGCM, true},
		{"AES_GCM", EncryptionAESGCM, true}, {"chacha20_poly1305", EncryptionChaCha20Poly1305, true},
		{"rot13", 0, false}, {"aes", 0, false},
	}
	for _, tt := range encs {
		e := Encryption(-1)
		err := e.UnmarshalText([]byte(tt.in))
		if tt.ok && (err != nil || e != tt.want) || !tt.ok && !errors.Is(err, ErrUnknownEncryption) {
			t.Errorf("Encryption.UnmarshalText(%q) = %v, %v", tt.in, e, err)
		}
	}
	// A failed parse leaves the value as it was (the default).
	c := CompressionGzip
	if err := c.UnmarshalText([]byte("zstd")); err == nil || c != CompressionGzip {
		t.Errorf("failed parse changed the value to %v", c)
	}
}

func TestDefaultSettingsAreTheJavaAgents(t *testing.T) {
	d := DefaultSettings()
	if d.Mode != ModeRaw || d.Compression != CompressionGzip || d.Level != DefaultLevel || d.Encryption != EncryptionNone || d.KeyBase64 != "" {
		t.Fatalf("DefaultSettings = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSettingsValidate(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(testKey)
	packet := func(c Compression, e Encryption, key string) Settings {
		return Settings{Mode: ModePacket, Compression: c, Level: DefaultLevel, Encryption: e, KeyBase64: key}
	}
	level := func(c Compression, l int) Settings {
		s := packet(c, EncryptionNone, "")
		s.Level = l
		return s
	}
	tests := []struct {
		name string
		s    Settings
		key  string // "" = valid
		want string
	}{
		{"RAW ignores everything else", Settings{Mode: ModeRaw, Compression: 99, Encryption: 99, KeyBase64: "short"}, "", ""},
		{"PACKET gzip", packet(CompressionGzip, EncryptionNone, ""), "", ""},
		{"PACKET unencrypted ignores the key", packet(CompressionNone, EncryptionNone, "!!"), "", ""},
		{"aes_gcm", packet(CompressionZlib, EncryptionAESGCM, good), "", ""},
		{"unpadded key", packet(CompressionZlib, EncryptionAESGCM, strings.TrimRight(good, "=")), "", ""},
		{"chacha", packet(CompressionDeflate, EncryptionChaCha20Poly1305, good), "", ""},
		{"gzip at 9", level(CompressionGzip, 9), "", ""},
		{"deflate at 1", level(CompressionDeflate, 1), "", ""},
		{"no compression ignores the level", level(CompressionNone, 42), "", ""},
		{"RAW ignores the level", Settings{Mode: ModeRaw, Compression: CompressionGzip, Level: -5}, "", ""},
		{"gzip at 0 (store)", level(CompressionGzip, 0), "", ""},
		{"zlib at 10", level(CompressionZlib, 10), "compression-level", "zlib takes 0 (store) to 9 (smallest), got 10"},
		{"deflate at -1", level(CompressionDeflate, -1), "compression-level", "deflate takes 0 (store) to 9 (smallest), got -1"},
		{"unknown mode", Settings{Mode: 7}, "packet-mode", "unknown packet mode 7"},
		{"unknown compression", packet(9, EncryptionNone, ""), "compression", "unknown compression"},
		{"unknown encryption", packet(CompressionGzip, 9, ""), "encryption", "unknown encryption"},
		{"no key", packet(CompressionGzip, EncryptionAESGCM, ""), "aes-secret-key-base64", `required when encryption is "aes_gcm"`},
		{"blank key", packet(CompressionGzip, EncryptionChaCha20Poly1305, "  "), "aes-secret-key-base64", `required when encryption is "chacha20_poly1305"`},
		{"short key", packet(CompressionGzip, EncryptionAESGCM, "c2hvcnQ="), "aes-secret-key-base64", "exactly 32 bytes (a 256-bit key; openssl rand -base64 32), got 5 bytes"},
		{"not base64", packet(CompressionGzip, EncryptionAESGCM, "!!!"), "aes-secret-key-base64", "key of 3 characters is not valid base64"},
	}
	for _, tt := range tests {
		err := tt.s.Validate()
		if tt.key == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		var fe *transport.FieldError
		if !errors.As(err, &fe) || fe.FieldKey() != tt.key || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %s: ...%s", tt.name, err, tt.key, tt.want)
		}
		if strings.Contains(err.Error(), good[:16]) {
			t.Errorf("%s: the error quotes the key: %v", tt.name, err)
		}
	}
}

// Options hands NewEncoder exactly what Validate accepted, key decoded.
func TestSettingsOptions(t *testing.T) {
	s := Settings{Mode: ModePacket, Compression: CompressionGzip, Level: 9, Encryption: EncryptionAESGCM,
		KeyBase64: strings.TrimRight(base64.StdEncoding.EncodeToString(testKey), "=")}
	o, err := s.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Mode != ModePacket || o.Compression != CompressionGzip || o.Level != 9 || o.Encryption != EncryptionAESGCM || string(o.Key) != string(testKey) {
		t.Fatalf("Options = %+v", o)
	}
	if _, err := NewEncoder(o); err != nil {
		t.Fatalf("NewEncoder refused what Options built: %v", err)
	}
	if o, err := (Settings{Mode: ModeRaw, Compression: CompressionZlib, KeyBase64: "x"}).Options(); err != nil || o.Mode != ModeRaw || o.Key != nil || o.Compression != CompressionNone {
		t.Errorf("RAW Options = %+v, %v", o, err)
	}
}
