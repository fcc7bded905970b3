package upgrade

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/identity"
)

func TestSignVerify(t *testing.T) {
	pub, priv, err := GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := GenerateKey(bytes.NewReader(bytes.Repeat([]byte{9}, 64)))
	sha := sha256.Sum256([]byte("binary"))
	sig := Sign(priv, "1.1.0", sha[:], false)
	down := Sign(priv, "0.9.0", sha[:], true)
	for _, tc := range []struct {
		name      string
		pub       []byte
		version   string
		sha, sig  []byte
		wantAllow bool
		wantErr   bool
	}{
		{"valid", pub, "1.1.0", sha[:], sig, false, false},
		{"downgrade allowed", pub, "0.9.0", sha[:], down, true, false},
		{"another key", other, "1.1.0", sha[:], sig, false, true},
		{"another version", pub, "1.2.0", sha[:], sig, false, true},
		{"another hash", pub, "1.1.0", make([]byte, 32), sig, false, true},
		{"short signature", pub, "1.1.0", sha[:], sig[:10], false, true},
	} {
		allow, err := Verify(tc.pub, tc.version, tc.sha, tc.sig)
		if (err != nil) != tc.wantErr || allow != tc.wantAllow || (err != nil && !errors.Is(err, ErrSignature)) {
			t.Errorf("%s: allow %t err %v", tc.name, allow, err)
		}
	}
	// The key formats round-trip.
	p, err := ParsePublicKey(EncodePublicKey(pub))
	if err != nil || !bytes.Equal(p, pub) {
		t.Fatalf("public key: %v", err)
	}
	path := filepath.Join(t.TempDir(), "k")
	if err := identity.WriteAtomic(path, EncodePrivateKey(priv), 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := ReadPrivateKey(path)
	if err != nil || !bytes.Equal(back, priv) {
		t.Fatalf("private key: %v", err)
	}
	for _, bad := range []string{"", "not base64!", "AAAA"} {
		if _, err := ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q) accepted", bad)
		}
	}
}

func FuzzParsePublicKey(f *testing.F) {
	for _, s := range []string{"", "AAAA", "reBaRI9tsItElXURjSq6QdiylPeNHbKLyX+g/uZ7jME=", "====", " x "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParsePublicKey(s)
		if err == nil && len(k) != 32 {
			t.Fatalf("accepted a %d-byte key", len(k))
		}
	})
}
