package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// ivSize is the GCM (and ChaCha20-Poly1305) nonce length used on the wire.
const ivSize = 12

// newAEAD builds the cipher for enc from a KeySize-byte key.
func newAEAD(enc Encryption, key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("encryption %s needs a key of exactly %d bytes, got %d", enc, KeySize, len(key))
	}
	switch enc {
	case EncryptionAESGCM:
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("aes key: %w", err)
		}
		// 12-byte nonce, 16-byte tag: what javax.crypto AES/GCM/NoPadding
		// with a 128-bit tag expects.
		return cipher.NewGCM(block)
	case EncryptionChaCha20Poly1305:
		return chacha20poly1305.New(key)
	}
	return nil, fmt.Errorf("%w %d", ErrUnknownEncryption, int(enc))
}
