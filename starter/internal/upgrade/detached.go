package upgrade

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// A detached signature is the file `edge-agent package sign` prints and a
// release ships beside each artifact as ARTIFACT.sig: three lines,
//
//	version: <version>
//	sha256: <lowercase hex of the file's SHA-256>
//	signature: <standard base64 of the 64-byte ed25519 signature>
//
// The signature is Sign's, over Message: a signed file cannot be passed
// off as another version nor another file as it.
type Detached struct {
	Version   string
	SHA256    []byte
	Signature []byte
}

// MaxDetachedSize bounds what ParseDetached reads: the three lines take
// under 300 bytes for any sane version.
const MaxDetachedSize = 4 << 10

// Marshal is the file's content.
func (d Detached) Marshal() []byte {
	return fmt.Appendf(nil, "version: %s\nsha256: %s\nsignature: %s\n",
		d.Version, hex.EncodeToString(d.SHA256), base64.StdEncoding.EncodeToString(d.Signature))
}

// ErrDetachedFormat is wrapped by ParseDetached's errors.
var ErrDetachedFormat = errors.New("not a detached signature (want the lines version:, sha256: and signature: that `edge-agent package sign` prints)")

// ParseDetached reads what Marshal writes. Errors name the line, never
// quote it.
func ParseDetached(b []byte) (Detached, error) {
	if len(b) > MaxDetachedSize {
		return Detached{}, fmt.Errorf("%w: %d bytes, at most %d", ErrDetachedFormat, len(b), MaxDetachedSize)
	}
	var d Detached
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		key, val, ok := strings.Cut(strings.TrimSuffix(line, "\r"), ": ")
		if !ok {
			return Detached{}, fmt.Errorf("%w: line %d has no \"key: value\"", ErrDetachedFormat, i+1)
		}
		if seen[key] {
			return Detached{}, fmt.Errorf("%w: line %d repeats a key", ErrDetachedFormat, i+1)
		}
		seen[key] = true
		var err error
		switch key {
		case "version":
			if !ValidVersion(val) {
				return Detached{}, fmt.Errorf("%w: line %d: the version is not a semantic version", ErrDetachedFormat, i+1)
			}
			d.Version = val
		case "sha256":
			d.SHA256, err = hex.DecodeString(val)
			if err != nil || len(d.SHA256) != 32 || val != strings.ToLower(val) {
				return Detached{}, fmt.Errorf("%w: line %d: sha256 is not 64 lowercase hex digits", ErrDetachedFormat, i+1)
			}
		case "signature":
			d.Signature, err = base64.StdEncoding.Strict().DecodeString(val)
			if err != nil || len(d.Signature) != ed25519.SignatureSize {
				return Detached{}, fmt.Errorf("%w: line %d: signature is not the base64 of %d bytes", ErrDetachedFormat, i+1, ed25519.SignatureSize)
			}
		default:
			return Detached{}, fmt.Errorf("%w: line %d has an unknown key (%d bytes)", ErrDetachedFormat, i+1, len(key))
		}
	}
	for _, k := range []string{"version", "sha256", "signature"} {
		if !seen[k] {
			return Detached{}, fmt.Errorf("%w: no %s line", ErrDetachedFormat, k)
		}
	}
	return d, nil
}

// SignDetached signs a file's SHA-256 for version.
func SignDetached(key ed25519.PrivateKey, version string, sha []byte, allowDowngrade bool) Detached {
	return Detached{Version: version, SHA256: bytes.Clone(sha), Signature: Sign(key, version, sha, allowDowngrade)}
}

// ErrFileChanged is wrapped when a file's SHA-256 is not the one signed.
var ErrFileChanged = errors.New("the file's SHA-256 is not the one its signature covers: it was changed after signing, or is another file")

// ErrWrongKey is returned when a detached signature does not verify.
var ErrWrongKey = errors.New("the signature does not verify against the public key given: it was made with another key, or altered")

// VerifyDetached checks d against a file's SHA-256 and the public key.
func VerifyDetached(pub ed25519.PublicKey, d Detached, fileSHA []byte) error {
	if !bytes.Equal(d.SHA256, fileSHA) {
		return fmt.Errorf("%w (file %x, signed %x)", ErrFileChanged, fileSHA, d.SHA256)
	}
	if _, err := Verify(pub, d.Version, d.SHA256, d.Signature); err != nil {
		return ErrWrongKey
	}
	return nil
}
