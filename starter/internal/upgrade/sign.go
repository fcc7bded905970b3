package upgrade

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Key formats: a public key is the standard base64 of its 32 bytes (the
// value of management.opamp.packages.public-key); a private key file
// holds the standard base64 of the 32-byte ed25519 seed on one line.

// ErrSignature is wrapped when an offer's signature does not verify.
var ErrSignature = errors.New("package signature does not verify against management.opamp.packages.public-key")

// Message is what a package signature signs: the version, the file's
// SHA-256 and the downgrade permission. Binding the version keeps an old
// signed file from being offered as a newer one.
func Message(version string, sha []byte, allowDowngrade bool) []byte {
	return fmt.Appendf(nil, "edge-agent package v1\nversion=%s\nsha256=%s\nallow-downgrade=%t\n", version, hex.EncodeToString(sha), allowDowngrade)
}

// Sign signs the package message with key.
func Sign(key ed25519.PrivateKey, version string, sha []byte, allowDowngrade bool) []byte {
	return ed25519.Sign(key, Message(version, sha, allowDowngrade))
}

// Verify checks sig for version and sha, and tells whether the signer
// allowed a downgrade (the permission is part of what was signed, so the
// offer carries no separate, unsigned flag).
func Verify(pub ed25519.PublicKey, version string, sha, sig []byte) (allowDowngrade bool, err error) {
	if len(sig) != ed25519.SignatureSize {
		return false, fmt.Errorf("%w: signature is %d bytes, want %d", ErrSignature, len(sig), ed25519.SignatureSize)
	}
	for _, allow := range []bool{false, true} {
		if ed25519.Verify(pub, Message(version, sha, allow), sig) {
			return allow, nil
		}
	}
	return false, ErrSignature
}

// ParsePublicKey reads a public key in its base64 form.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("public key: not base64: %w", err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key: %d bytes, want %d (an ed25519 key from `edge-agent package keygen`)", len(raw), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// EncodePublicKey is the base64 form ParsePublicKey reads.
func EncodePublicKey(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

// GenerateKey makes a key pair; rnd nil is crypto/rand.
func GenerateKey(rnd io.Reader) (ed25519.PublicKey, ed25519.PrivateKey, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	pub, priv, err := ed25519.GenerateKey(rnd)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	return pub, priv, nil
}

// EncodePrivateKey is the private key file's content.
func EncodePrivateKey(priv ed25519.PrivateKey) []byte {
	return []byte(base64.StdEncoding.EncodeToString(priv.Seed()) + "\n")
}

// ReadPrivateKey reads a private key file.
func ReadPrivateKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read private key: %w", err)
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("private key %s: want the base64 of a %d-byte ed25519 seed (from `edge-agent package keygen`)", path, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// FileSHA256 is the SHA-256 of a file's content.
func FileSHA256(path string) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("hash package: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, 0, fmt.Errorf("hash package %s: %w", path, err)
	}
	return h.Sum(nil), n, nil
}
