package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// writePair writes a self-signed certificate named cn and its key into
// dir's cert.pem and key.pem, each by rename (as a rotation tool does),
// and returns the certificate.
func writePair(t *testing.T, dir, cn string) *x509.Certificate {
	t.Helper()
	c := transporttest.NewCert(t, transporttest.CertOptions{Name: cn})
	in := transporttest.Cert{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	in.Rotate(t, c)
	return c.Leaf
}

func put(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func cn(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

func TestKeyPairFollowsTheFiles(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "one")
	now := time.Unix(1000, 0)
	k, err := Load(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), Options{CheckEvery: 10 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if got := cn(t, k.Current()); got != "one" {
		t.Fatalf("first pair %q", got)
	}
	writePair(t, dir, "two")
	if got := cn(t, k.Current()); got != "one" {
		t.Errorf("looked again before CheckEvery: %q", got)
	}
	now = now.Add(10 * time.Second)
	if got := cn(t, k.Current()); got != "two" || k.Err() != nil {
		t.Errorf("after the rotation %q, %v", got, k.Err())
	}
	// Half a rotation: a certificate without its key keeps the pair.
	writePair(t, t.TempDir(), "elsewhere")
	put(t, filepath.Join(dir, "key.pem"), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	now = now.Add(10 * time.Second)
	if got := cn(t, k.Current()); got != "two" || k.Err() == nil {
		t.Errorf("with a broken key %q, err %v", got, k.Err())
	}
	writePair(t, dir, "three")
	now = now.Add(10 * time.Second)
	if got := cn(t, k.Current()); got != "three" || k.Err() != nil {
		t.Errorf("once fixed %q, %v", got, k.Err())
	}
}

// A TLS server on GetCertificate presents the new certificate at the next
// handshake, with no restart.
func TestServerPresentsTheRotatedCertificate(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "before")
	k, err := Load(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), Options{CheckEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: k.GetCertificate, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	presented := func() string {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test reads the name only
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := presented(); got != "before" {
		t.Fatalf("presented %q", got)
	}
	writePair(t, dir, "after")
	if got := presented(); got != "after" {
		t.Errorf("after the rotation presented %q", got)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.pem"), "key.pem", Options{})
	if err == nil || !strings.Contains(err.Error(), "nope.pem") {
		t.Errorf("err %v", err)
	}
}
