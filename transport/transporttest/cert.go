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

// Cert is a certificate for 127.0.0.1 and "localhost" with its key: a
// server presents Pair, a client trusts CertFile when it is self-signed
// (SelfSigned) or the CA's file when a CA issued it (NewPKI).
type Cert struct {
	Pair     tls.Certificate
	Leaf     *x509.Certificate
	CertFile string // PEM certificate
	KeyFile  string // PEM private key
}

// SelfSigned makes a Cert valid from an hour ago for validFor, its own
// CA, written into a temporary folder of tb's.
func SelfSigned(tb testing.TB, validFor time.Duration) Cert {
	tb.Helper()
	tmpl := template(tb, "edgesocket test", validFor)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	return issue(tb, tmpl, nil, tb.TempDir(), "")
}

// PKI is a throw-away CA and the server and client certificates it
// issued, for mutual TLS: each side presents its Cert and trusts CAFile.
type PKI struct {
	CAFile         string // PEM certificate of the CA
	CA             Cert
	Server, Client Cert
}

// NewPKI makes a CA and a server and a client certificate (each usable
// for both roles), valid from an hour ago for a day, written into a
// temporary folder of tb's.
func NewPKI(tb testing.TB) PKI {
	tb.Helper()
	dir := tb.TempDir()
	caTmpl := template(tb, "test CA", 24*time.Hour)
	caTmpl.KeyUsage = x509.KeyUsageCertSign
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.IPAddresses, caTmpl.DNSNames = nil, nil
	ca := issue(tb, caTmpl, nil, dir, "ca")
	p := PKI{CAFile: ca.CertFile, CA: ca}
	for _, side := range []struct {
		name string
		to   *Cert
	}{{"server", &p.Server}, {"client", &p.Client}} {
		tmpl := template(tb, side.name, 24*time.Hour)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		*side.to = issue(tb, tmpl, &ca, dir, side.name)
	}
	return p
}

// template is a leaf for 127.0.0.1 and "localhost" valid from an hour
// ago for validFor, with a random serial.
func template(tb testing.TB, name string, validFor time.Duration) *x509.Certificate {
	tb.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validFor),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
}

// issue makes a key and the certificate tmpl describes, signed by parent
// (nil: self-signed), and writes both as PEM into dir (prefix-cert.pem
// and prefix-key.pem; cert.pem and key.pem for an empty prefix).
func issue(tb testing.TB, tmpl *x509.Certificate, parent *Cert, dir, prefix string) Cert {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		signer, signerKey = parent.Leaf, parent.Pair.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
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
	if prefix != "" {
		prefix += "-"
	}
	c := Cert{
		Pair:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Leaf:     leaf,
		CertFile: filepath.Join(dir, prefix+"cert.pem"),
		KeyFile:  filepath.Join(dir, prefix+"key.pem"),
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
