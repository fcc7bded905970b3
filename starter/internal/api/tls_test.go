package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCert writes a self-signed certificate for name and its key.
func writeCert(t *testing.T, name string) TLSSettings {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := TLSSettings{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	if err := os.WriteFile(s.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// With http.tls the API speaks HTTPS; status and db on this host trust
// exactly the configured certificate (the name is for other hosts, they
// dial loopback) and nothing else.
func TestTLSServesHTTPSToAPinnedClient(t *testing.T) {
	cert := writeCert(t, "edge-host.example")
	srv, err := Start(Options{Source: &fakeSource{st: running()}, Settings: Settings{Listen: "127.0.0.1:0", TLS: cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())

	c, err := NewClient(Settings{Listen: srv.Addr(), TLS: cert})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.base, "https://") {
		t.Fatalf("client base %q, want https", c.base)
	}
	st, err := c.Status(context.Background())
	if err != nil || st.AgentID != "agent-1" {
		t.Fatalf("status over TLS = %+v, %v", st, err)
	}

	// A client pinned to another certificate refuses this server.
	other := writeCert(t, "edge-host.example")
	c2, err := NewClient(Settings{Listen: srv.Addr(), TLS: other})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Status(context.Background()); !errors.Is(err, errNotOurCertificate) {
		t.Fatalf("status with another certificate pinned: %v, want errNotOurCertificate", err)
	}
	// Plain HTTP gets nothing useful from an HTTPS listener.
	plain, _ := NewClient(Settings{Listen: srv.Addr()})
	if _, err := plain.Status(context.Background()); err == nil {
		t.Fatal("plain HTTP to the TLS listener succeeded")
	}
}

func TestTLSSettingsValidate(t *testing.T) {
	cert := writeCert(t, "h")
	for _, tc := range []struct {
		name string
		s    Settings
		want string // "" = valid
	}{
		{"all interfaces with TLS only", Settings{Listen: "0.0.0.0:9466", TLS: cert}, ""},
		{"all interfaces with neither", Settings{Listen: "0.0.0.0:9466"}, "set http.token (a bearer token) or http.tls"},
		{"certificate without key", Settings{Listen: "127.0.0.1:9466", TLS: TLSSettings{CertFile: cert.CertFile}}, "cert-file and key-file go together"},
		{"key without certificate", Settings{Listen: "127.0.0.1:9466", TLS: TLSSettings{KeyFile: cert.KeyFile}}, "cert-file and key-file go together"},
	} {
		err := tc.s.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// An unreadable pair stops the start, naming the keys.
	if _, err := Start(Options{Source: &fakeSource{}, Settings: Settings{Listen: "127.0.0.1:0", TLS: TLSSettings{CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"}}}); err == nil || !strings.Contains(err.Error(), "http.tls.cert-file") {
		t.Fatalf("Start with missing files: %v", err)
	}
}
