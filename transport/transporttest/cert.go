package transporttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Cert is a self-signed certificate for 127.0.0.1 and "localhost", which
// is its own CA: a server presents Pair, a client trusts CertFile.
type Cert struct {
	Pair     tls.Certificate
	Leaf     *x509.Certificate
	CertFile string // PEM certificate
	KeyFile  string // PEM private key
}

// SelfSigned makes a Cert valid from an hour ago for validFor, written
// into a temporary folder of tb's.
func SelfSigned(tb testing.TB, validFor time.Duration) Cert {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "edgesocket test"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	c := Cert{
		Pair:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Leaf:     leaf,
		CertFile: filepath.Join(dir, "cert.pem"),
		KeyFile:  filepath.Join(dir, "key.pem"),
	}
	if err := os.WriteFile(c.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(c.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return c
}

// Rotate puts next's certificate and key in c's files, each through a
// rename, as a renewal in place does (a reader sees the old file or the
// new one, never half of one).
func (c Cert) Rotate(tb testing.TB, next Cert) {
	tb.Helper()
	for _, f := range [][2]string{{next.CertFile, c.CertFile}, {next.KeyFile, c.KeyFile}} {
		data, err := os.ReadFile(f[0])
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(f[1]+".new", data, 0o600); err != nil {
			tb.Fatal(err)
		}
		if err := os.Rename(f[1]+".new", f[1]); err != nil {
			tb.Fatal(err)
		}
	}
}
