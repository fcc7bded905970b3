package syslog

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*Config)
		keys []string // the keys the errors name; none: valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"udp upper case", func(c *Config) { c.Protocol = "UDP"; c.Format = "RFC5424"; c.Payload = "Parsed" }, nil},
		{"bad enums", func(c *Config) { c.Protocol = "sctp"; c.Format = "json"; c.Payload = "both" }, []string{"protocol", "format", "payload"}},
		{"bad listen", func(c *Config) { c.Listen = "5514" }, []string{"listen"}},
		{"no port", func(c *Config) { c.Listen = "127.0.0.1:" }, []string{"listen"}},
		{"limits", func(c *Config) { c.MaxMessageBytes = 10; c.MaxConnections = 0; c.IdleTimeout = -time.Second }, []string{"max-message-bytes", "max-connections", "idle-timeout-ms"}},
		{"guard limits", func(c *Config) {
			c.MaxConnectionsPerSource = 0
			c.FirstByteTimeout = 0
			c.AuthFailureMaxDelay = -time.Second
			c.LogInterval = 0
			c.ReceiveBufferBytes = -1
		}, []string{"max-connections-per-source", "first-byte-timeout-ms", "auth-failure-max-delay-ms", "log-interval-ms", "receive-buffer-bytes"}},
		{"per source over the total", func(c *Config) { c.MaxConnections = 10; c.MaxConnectionsPerSource = 11 }, []string{"max-connections-per-source"}},
		{"first byte after idle", func(c *Config) { c.IdleTimeout = time.Second; c.FirstByteTimeout = 2 * time.Second }, []string{"first-byte-timeout-ms"}},
		{"first byte without idle", func(c *Config) { c.IdleTimeout = 0; c.FirstByteTimeout = time.Hour }, nil},
		{"receive buffer too large", func(c *Config) { c.ReceiveBufferBytes = maxReceiveBufferBytes + 1 }, []string{"receive-buffer-bytes"}},
		{"strict, no wait, kernel buffer", func(c *Config) { c.Strict = true; c.AuthFailureMaxDelay = 0; c.ReceiveBufferBytes = 0 }, nil},
		{"queue below a message", func(c *Config) { c.QueueBytes = 1000 }, []string{"queue-bytes"}},
		{"tls without files", func(c *Config) { c.Protocol = "tls" }, []string{"tls"}},
		{"tls files missing", func(c *Config) {
			c.Protocol = "tls"
			c.TLS.CertFile, c.TLS.KeyFile = "/nonexistent/c", "/nonexistent/k"
		}, []string{"tls.cert-file"}},
		{"tls keys with tcp", func(c *Config) { c.TLS.CertFile = "c.pem" }, []string{"tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewDefaultConfig()
			tc.mut(c)
			err := c.Validate()
			var got []string
			for _, e := range flatten(err) {
				var fe *input.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("not a FieldError: %v", e)
				}
				got = append(got, fe.Key)
			}
			if strings.Join(got, ",") != strings.Join(tc.keys, ",") {
				t.Fatalf("errors on %v, want %v: %v", got, tc.keys, err)
			}
		})
	}
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestAdvice(t *testing.T) {
	for listen, warn := range map[string]bool{"127.0.0.1:514": false, "[::1]:514": false, "localhost:514": false,
		"0.0.0.0:514": true, ":514": true, "192.0.2.1:514": true, "gw.example:514": true} {
		c := NewDefaultConfig()
		c.Listen = listen
		if got := len(c.Advice()) > 0; got != warn {
			t.Errorf("%s over tcp: warned %v, want %v", listen, got, warn)
		}
		c.Protocol = ProtoTLS
		if len(c.Advice()) > 0 {
			t.Errorf("%s over tls warned", listen)
		}
	}
}

// TLS with a client CA: a client with a certificate it signed delivers; a
// client without one fails the handshake, counted as a refused client
// certificate (not an error), and delivers nothing.
func TestTLSMutual(t *testing.T) {
	dir := t.TempDir()
	ca := newCert(t, dir, "ca", nil)
	newCert(t, dir, "server", &ca)
	newCert(t, dir, "client", &ca)
	in := openInput(t, func(c *Config) {
		c.Protocol = ProtoTLS
		c.TLS = TLSConfig{CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server.key"), ClientCAFile: filepath.Join(dir, "ca.pem")}
	})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	clientCert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	send := func(certs []tls.Certificate, text string) error {
		c, err := tls.Dial("tcp", in.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: certs})
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "<13>1 - h a - - - %s\n", text); err != nil {
			return err
		}
		// TLS 1.3 reports a refused client certificate on the first read.
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		var ne net.Error
		if _, err := c.Read(make([]byte, 1)); err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			return err
		}
		return nil
	}
	if err := send(nil, "anonymous"); err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	if err := send([]tls.Certificate{clientCert}, "trusted"); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, in, 1, 5*time.Second)
	if len(evs) != 1 || evs[0]["msg"] != "trusted" {
		t.Fatalf("events %v", msgs(evs))
	}
	transporttest.Eventually(t, 5*time.Second, "in.Stats().AuthFailedNoCert == 1", func() bool { return in.Stats().AuthFailedNoCert == 1 }) // the failed handshake
	if st := in.Stats(); st.ConnectionsTotal != 2 || st.LinesRead != 1 || st.Errors != 0 || st.AuthFailedBadCert != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// newCert writes name.pem and name.key into dir, signed by parent (a
// self-signed CA when nil), valid for localhost and 127.0.0.1 since before
// the clock of a synctest bubble starts (2000).
func newCert(t *testing.T, dir, name string, parent *transporttest.Cert) transporttest.Cert {
	t.Helper()
	return transporttest.NewCert(t, transporttest.CertOptions{
		Name: name, Dir: dir, Parent: parent, ValidFor: time.Hour,
		NotBefore: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC),
	})
}
