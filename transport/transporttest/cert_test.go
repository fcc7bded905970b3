package transporttest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"
)

// handshake runs a TLS handshake over an in-memory pipe and returns the
// client's and the server's errors. TLS 1.2 without session tickets: the
// pipe has no buffer, so nothing may be written after either side's
// handshake returns (TLS 1.3 writes tickets and late client-cert alerts).
func handshake(t *testing.T, server, client *tls.Config) (cerr, serr error) {
	t.Helper()
	server = server.Clone()
	server.SessionTicketsDisabled = true
	server.MaxVersion = tls.VersionTLS12
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		err := s.Handshake()
		if err != nil {
			_ = a.Close()
		}
		done <- err
	}()
	c := tls.Client(b, client)
	cerr = c.Handshake()
	if cerr != nil {
		_ = b.Close()
	}
	return cerr, <-done
}

func pool(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no PEM certificate", file)
	}
	return p
}

func loadPair(t *testing.T, c Cert) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// A client trusting a SelfSigned certificate's file completes a handshake
// with a server presenting the pair read back from its files.
func TestSelfSignedHandshake(t *testing.T) {
	c := SelfSigned(t, time.Hour)
	srv := &tls.Config{Certificates: []tls.Certificate{loadPair(t, c)}}
	cli := &tls.Config{RootCAs: pool(t, c.CertFile), ServerName: "127.0.0.1"}
	if cerr, serr := handshake(t, srv, cli); cerr != nil || serr != nil {
		t.Fatalf("client %v, server %v", cerr, serr)
	}
}

// NewPKI's certificates pass mutual TLS with the CA's file as the trust
// on both sides; a client without its certificate is refused.
func TestPKIMutualTLS(t *testing.T) {
	p := NewPKI(t)
	srv := &tls.Config{Certificates: []tls.Certificate{loadPair(t, p.Server)},
		ClientCAs: pool(t, p.CAFile), ClientAuth: tls.RequireAndVerifyClientCert}
	cli := &tls.Config{RootCAs: pool(t, p.CAFile), ServerName: "localhost", Certificates: []tls.Certificate{loadPair(t, p.Client)}}
	if cerr, serr := handshake(t, srv, cli); cerr != nil || serr != nil {
		t.Fatalf("client %v, server %v", cerr, serr)
	}
	anon := &tls.Config{RootCAs: pool(t, p.CAFile), ServerName: "localhost"}
	if _, serr := handshake(t, srv, anon); serr == nil {
		t.Fatal("server accepted a client without a certificate")
	}
	if p.Server.Leaf.Issuer.CommonName != p.CA.Leaf.Subject.CommonName || !p.CA.Leaf.IsCA {
		t.Fatalf("server issued by %q, CA %q (IsCA %v)", p.Server.Leaf.Issuer, p.CA.Leaf.Subject, p.CA.Leaf.IsCA)
	}
}
