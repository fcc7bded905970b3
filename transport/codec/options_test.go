package codec

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestParseNames(t *testing.T) {
	for in, want := range map[string]Mode{"raw": ModeRaw, "RAW": ModeRaw, "Packet": ModePacket, " packet ": ModePacket} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseMode(""); err == nil {
		t.Error("ParseMode(\"\") accepted")
	}
	for in, want := range map[string]Compression{"": CompressionNone, "NONE": CompressionNone, "gzip": CompressionGzip, "ZLIB": CompressionZlib, "Deflate": CompressionDeflate} {
		if got, err := ParseCompression(in); err != nil || got != want {
			t.Errorf("ParseCompression(%q) = %v, %v", in, got, err)
		}
	}
	for in, want := range map[string]Encryption{"": EncryptionNone, "aes_gcm": EncryptionAESGCM, "AES_GCM": EncryptionAESGCM, "chacha20_poly1305": EncryptionChaCha20Poly1305} {
		if got, err := ParseEncryption(in); err != nil || got != want {
			t.Errorf("ParseEncryption(%q) = %v, %v", in, got, err)
		}
	}
	_, err := ParseCompression("x")
	if err == nil || err.Error() != `unknown compression "x" (want none, gzip, zlib or deflate)` || !errors.Is(err, ErrUnknownCompression) {
		t.Errorf("ParseCompression(x) err = %v", err)
	}
	_, err = ParseEncryption("aes")
	if err == nil || !strings.Contains(err.Error(), `unknown encryption "aes"`) {
		t.Errorf("ParseEncryption(aes) err = %v", err)
	}
	_, err = ParseMode("json")
	if err == nil || !strings.Contains(err.Error(), `"json"`) {
		t.Errorf("ParseMode(json) err = %v", err)
	}
}

func TestDecodeKey(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(testKey)
	if k, err := DecodeKey(good + "\n"); err != nil || len(k) != KeySize {
		t.Fatalf("DecodeKey(good) = %d bytes, %v", len(k), err)
	}
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16)), base64.StdEncoding.EncodeToString(make([]byte, 33))} {
		_, err := DecodeKey(bad)
		if err == nil || !strings.Contains(err.Error(), "exactly 32 bytes") && !strings.Contains(err.Error(), "base64") {
			t.Errorf("DecodeKey(%q) err = %v", bad, err)
		}
	}
	_, err := DecodeKey(base64.StdEncoding.EncodeToString(make([]byte, 16)))
	if !errors.Is(err, ErrKeySize) || !strings.Contains(err.Error(), "exactly 32 bytes (a 256-bit key; openssl rand -base64 32), got 16 bytes") {
		t.Errorf("short key message: %v", err)
	}
	if _, err := DecodeKey("not base64!"); !errors.Is(err, ErrKeyNotBase64) {
		t.Errorf("not base64: %v", err)
	}
	// Java's Base64 decoder takes a key without its padding; so do we.
	unpadded := base64.RawStdEncoding.EncodeToString(testKey)
	if k, err := DecodeKey(unpadded); err != nil || !bytes.Equal(k, testKey) {
		t.Errorf("unpadded key (%d characters): %d bytes, %v", len(unpadded), len(k), err)
	}
}

func TestNewEncoderRefusesBadOptions(t *testing.T) {
	tests := []Options{
		{Mode: ModePacket, Encryption: EncryptionAESGCM},
		{Mode: ModePacket, Encryption: EncryptionAESGCM, Key: make([]byte, 16)},
		{Mode: ModePacket, Compression: Compression(9)},
		{Mode: ModePacket, Compression: CompressionGzip, Level: 10},
		{Mode: ModePacket, Compression: CompressionZlib, Level: -1},
		{Mode: ModePacket, Encryption: Encryption(9)},
		{Mode: Mode(5)},
	}
	for _, o := range tests {
		if _, err := NewEncoder(o); err == nil {
			t.Errorf("NewEncoder(%+v) accepted", o)
		}
	}
	if _, err := NewDecoder(ModePacket, make([]byte, 5)); err == nil || !strings.Contains(err.Error(), "exactly 32 bytes") {
		t.Errorf("NewDecoder with a 5-byte key: %v", err)
	}
	if _, err := NewDecoder(ModeRaw, make([]byte, 5)); err != nil {
		t.Errorf("RAW decoder must ignore the key like the engine: %v", err)
	}
}
