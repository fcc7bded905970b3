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

// Cert is a certificate for 127.0.0.1 and "localhost", for servers and
// clients: a server presents Pair, a client trusts CertFile (a self-signed
// Cert is its own CA).
type Cert struct {
	Pair     tls.Certificate
	Leaf     *x509.Certificate
	CertFile string // PEM certificate
	KeyFile  string // PEM private key
}

// CertOptions shape NewCert's certificate; the zero value is a
// self-signed one named "edgesocket test", valid from an hour ago for a
// day, written into a temporary folder.
type CertOptions struct {
	// Name is the subject's common name, and the files' name (Name.pem,
	// Name.key) when set; else "edgesocket test" in cert.pem, key.pem.
	Name string
	// NotBefore is when it becomes valid (zero: an hour ago); a test in
	// a synctest bubble, whose clock starts in 2000, sets an earlier one.
	NotBefore time.Time
	// ValidFor is how long from now it stays valid (0: a day).
	ValidFor time.Duration
	// Parent signs it; nil makes it self-signed and a CA.
	Parent *Cert
	// Dir is where its files go ("": a temporary folder of tb's).
	Dir string
}

// SelfSigned makes a self-signed Cert valid from an hour ago for
// validFor, written into a temporary folder of tb's.
func SelfSigned(tb testing.TB, validFor time.Duration) Cert {
	tb.Helper()
	return NewCert(tb, CertOptions{ValidFor: validFor})
}

// NewCert makes a Cert as o says: self-signed (a CA) or signed by
// o.Parent; an ECDSA P-256 key in SEC 1 form.
func NewCert(tb testing.TB, o CertOptions) Cert {
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
	name, certName, keyName := o.Name, o.Name+".pem", o.Name+".key"
	if name == "" {
		name, certName, keyName = "edgesocket test", "cert.pem", "key.pem"
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = now.Add(-time.Hour)
	}
	if o.ValidFor == 0 {
		o.ValidFor = 24 * time.Hour
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    o.NotBefore,
		NotAfter:     now.Add(o.ValidFor),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	parent, signer := tmpl, any(key)
	if o.Parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		parent, signer = o.Parent.Leaf, o.Parent.Pair.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
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
	dir := o.Dir
	if dir == "" {
		dir = tb.TempDir()
	}
	c := Cert{
		Pair:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Leaf:     leaf,
		CertFile: filepath.Join(dir, certName),
		KeyFile:  filepath.Join(dir, keyName),
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

// PKI is a throw-away CA and the server and client certificates it
// issued, for mutual TLS: each side presents its Cert and trusts CAFile.
type PKI struct {
	CAFile         string // PEM certificate of the CA
	CA             Cert
	Server, Client Cert
}

// NewPKI makes a CA and a server and a client certificate (each usable
// for both roles), valid from an hour ago for a day, written into one
// temporary folder of tb's.
func NewPKI(tb testing.TB) PKI {
	tb.Helper()
	dir := tb.TempDir()
	ca := NewCert(tb, CertOptions{Name: "ca", Dir: dir})
	return PKI{CAFile: ca.CertFile, CA: ca,
		Server: NewCert(tb, CertOptions{Name: "server", Parent: &ca, Dir: dir}),
		Client: NewCert(tb, CertOptions{Name: "client", Parent: &ca, Dir: dir})}
}
