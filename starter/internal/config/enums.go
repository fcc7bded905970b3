package config

import "strings"

// Packet modes (output.packet-mode).
const (
	PacketModeRaw    = "RAW"
	PacketModePacket = "PACKET"
)

// Encryptions (output.encryption) that need a 32-byte key.
const (
	EncryptionNone     = "none"
	EncryptionAESGCM   = "aes_gcm"
	EncryptionChaCha20 = "chacha20_poly1305"
)

// The parse helpers below accept what a user may write and return the
// normalised value; Load stores the normalised form and Validate uses the
// same helpers, so a Config built in code may use either form.

func parseDelivery(s string) (string, bool) {
	switch strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_")) {
	case "", "BEST_EFFORT":
		return DeliveryBestEffort, true
	case "NON", "NONE":
		return DeliveryNon, true
	}
	return s, false
}

func parseOutputType(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "":
		return OutputConsole, true
	case OutputConsole, OutputTransport:
		return v, true
	}
	return s, false
}

func parsePacketMode(s string) (string, bool) {
	switch v := strings.ToUpper(strings.TrimSpace(s)); v {
	case "":
		return PacketModeRaw, true
	case PacketModeRaw, PacketModePacket:
		return v, true
	}
	return s, false
}

// parseCompression: an empty value means none, as in the Java agent.
func parseCompression(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "":
		return "none", true
	case "none", "gzip", "zlib", "deflate":
		return v, true
	}
	return s, false
}

func parseEncryption(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "":
		return EncryptionNone, true
	case EncryptionNone, EncryptionAESGCM, EncryptionChaCha20:
		return v, true
	}
	return s, false
}

func parseAuthType(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "token":
		return "token", true
	}
	return s, false
}

func parseLogLevel(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "":
		return "info", true
	case "debug", "info", "warn", "error":
		return v, true
	case "warning":
		return "warn", true
	}
	return s, false
}

// parseLogFormat: "logfmt" is what slog's text handler writes.
func parseLogFormat(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "":
		return "json", true
	case "json", "text":
		return v, true
	case "logfmt":
		return "text", true
	}
	return s, false
}

// normalize rewrites enum values to their canonical form and trims the
// values the Java agent trims. Invalid values are left for Validate.
func (c *Config) normalize() {
	norm := func(p *string, parse func(string) (string, bool)) {
		if v, ok := parse(*p); ok {
			*p = v
		}
	}
	norm(&c.Agent.DeliveryGuarantee, parseDelivery)
	norm(&c.Output.Type, parseOutputType)
	norm(&c.Output.PacketMode, parsePacketMode)
	norm(&c.Output.Compression, parseCompression)
	norm(&c.Output.Encryption, parseEncryption)
	norm(&c.Output.AuthType, parseAuthType)
	norm(&c.Log.Level, parseLogLevel)
	norm(&c.Log.Format, parseLogFormat)
	c.Output.Endpoint = strings.TrimSpace(c.Output.Endpoint)
	c.Output.Token = strings.TrimSpace(c.Output.Token)
	c.Output.AESSecretKeyBase64 = strings.TrimSpace(c.Output.AESSecretKeyBase64)
	c.Agent.ID = strings.TrimSpace(c.Agent.ID)
	c.Output.ID = strings.TrimSpace(c.Output.ID)
}
