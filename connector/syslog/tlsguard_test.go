package syslog

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// tlsFiles writes a CA, a server certificate and two client certificates
// (one from another CA) and returns their paths.
type tlsFiles struct {
	dir                 string
	pool                *x509.CertPool
	client, otherClient tls.Certificate
}

func newTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca := newCert(t, dir, "ca", nil)
	newCert(t, dir, "server", &ca)
	newCert(t, dir, "client", &ca)
	other := newCert(t, dir, "otherca", nil)
	newCert(t, dir, "otherclient", &other)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	load := func(name string) tls.Certificate {
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return tlsFiles{dir: dir, pool: pool, client: load("client"), otherClient: load("otherclient")}
}

func (f tlsFiles) config(mutual bool) func(*Config) {
	return func(c *Config) {
		c.Protocol = ProtoTLS
		c.TLS = TLSConfig{CertFile: filepath.Join(f.dir, "server.pem"), KeyFile: filepath.Join(f.dir, "server.key")}
		if mutual {
			c.TLS.ClientCAFile = filepath.Join(f.dir, "ca.pem")
		}
	}
}

// A TLS connection that never starts its handshake is closed at
// first-byte-timeout-ms, and is evicted like a silent TCP one: a client
// that handshakes at once gets in while they fill the budget.
func TestTLSSilentHandshake(t *testing.T) {
	f := newTLSFiles(t)
	synctest.Test(t, func(t *testing.T) {
		in, ln, _ := bubbleInput(t, func(c *Config) {
			f.config(false)(c)
			c.MaxConnections = 3
			c.MaxConnectionsPerSource = 3
			c.FirstByteTimeout = 3 * time.Second
		})
		var mute []net.Conn
		for range 3 {
			mute = append(mute, ln.dial(t, "10.0.0.9"))
		}
		raw := ln.dial(t, "10.0.0.1")
		tc := tls.Client(raw, &tls.Config{RootCAs: f.pool, ServerName: "localhost"})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(tc, "<13>1 - h app - - - over tls\n"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := pollMsgs(t, in); len(got) != 1 || got[0] != "over tls" {
			t.Fatalf("messages %q", got)
		}
		if isOpen(mute[0]) || !isOpen(mute[1]) {
			t.Fatal("the oldest silent TLS connection was not the one evicted")
		}
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()
		if isOpen(mute[1]) || isOpen(mute[2]) {
			t.Fatal("a TLS connection without a handshake outlived first-byte-timeout-ms")
		}
		if st := in.Stats(); st.ConnectionsTimedOut != 2 || st.ConnectionsEvicted != 1 || st.Errors != 0 || st.Connections != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// A TLS client that has begun its handshake is evicted only after every
// silent connection, however many newcomers arrive meanwhile.
func TestHandshakingOutlastsSilent(t *testing.T) {
	f := newTLSFiles(t)
	synctest.Test(t, func(t *testing.T) {
		in, ln, _ := bubbleInput(t, func(c *Config) {
			f.config(false)(c)
			c.MaxConnections = 4
			c.MaxConnectionsPerSource = 4
		})
		raw := ln.dial(t, "10.0.0.1")
		// The client hello, then nothing: the handshake has begun.
		hello := make(chan error, 1)
		go func() {
			tc := tls.Client(raw, &tls.Config{RootCAs: f.pool, ServerName: "localhost"})
			hello <- tc.Handshake()
		}()
		synctest.Wait()
		for range 20 {
			ln.dial(t, "10.0.0.9")
			synctest.Wait()
		}
		if err := <-hello; err != nil {
			t.Fatalf("the handshaking client was evicted: %v", err)
		}
		in.budget.mu.Lock()
		kept := in.budget.sources[netip.MustParsePrefix("10.0.0.1/32")]
		in.budget.mu.Unlock()
		if kept != 1 {
			t.Fatal("the handshaking client was evicted before the silent connections")
		}
		if st := in.Stats(); st.ConnectionsEvicted != 17 || st.Connections != 4 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// Mutual TLS: refused client certificates are counted by reason, make
// their source wait before each new handshake (doubling, bounded), are
// logged as one summary per interval naming nothing presented, and a
// handshake that succeeds forgives the source. Other sources never wait.
func TestAuthFailuresSlowedPerSource(t *testing.T) {
	f := newTLSFiles(t)
	synctest.Test(t, func(t *testing.T) {
		in, ln, logs := bubbleInput(t, func(c *Config) {
			f.config(true)(c)
			c.AuthFailureMaxDelay = time.Second
			c.LogInterval = 10 * time.Second
		})
		// handshake returns how long the server kept the client waiting
		// for its hello's answer, and whether the server accepted it.
		handshake := func(ip string, certs []tls.Certificate) (time.Duration, bool) {
			raw := ln.dial(t, ip)
			cfg := &tls.Config{RootCAs: f.pool, ServerName: "localhost"}
			if certs != nil {
				// Sent even when the server's CAs did not sign it.
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
			}
			tc := tls.Client(raw, cfg)
			start := time.Now()
			err := tc.Handshake()
			waited := time.Since(start)
			if err == nil {
				// TLS 1.3: the server judges the certificate after the
				// client's side is done; its verdict comes with a read.
				_ = tc.SetReadDeadline(time.Now().Add(time.Millisecond))
				_, err = tc.Read(make([]byte, 1))
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					err = nil
				}
			}
			_ = tc.Close()
			synctest.Wait()
			return waited, err == nil
		}
		want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second}
		for i, w := range want {
			certs := []tls.Certificate{f.otherClient}
			if i%2 == 0 {
				certs = nil
			}
			waited, ok := handshake("10.0.0.1", certs)
			if ok || waited != w {
				t.Fatalf("refusal %d: accepted %v after %v, want refused after %v", i, ok, waited, w)
			}
		}
		if waited, ok := handshake("10.0.0.2", []tls.Certificate{f.client}); !ok || waited != 0 {
			t.Fatalf("another source: accepted %v after %v", ok, waited)
		}
		// The wait runs from the last refusal; the other source's check
		// (a 1 ms read) took part of it.
		if waited, ok := handshake("10.0.0.1", []tls.Certificate{f.client}); !ok || waited != time.Second-time.Millisecond {
			t.Fatalf("the slowed source with a good certificate: accepted %v after %v", ok, waited)
		}
		if waited, ok := handshake("10.0.0.1", nil); ok || waited != 0 {
			t.Fatalf("after a success the source is forgiven: accepted %v after %v", ok, waited)
		}
		st := in.Stats()
		if st.AuthFailedNoCert != 4 || st.AuthFailedBadCert != 2 || st.Errors != 0 {
			t.Fatalf("stats %+v", st)
		}
		if n := len(logs.lines("level=WARN")); n != 0 {
			t.Fatalf("refusals logged one by one: %q", logs.lines("level=WARN"))
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		sum := logs.lines("TLS client certificates refused")
		if len(sum) != 1 || !strings.Contains(sum[0], "no_certificate=4") || !strings.Contains(sum[0], "bad_certificate=2") ||
			!strings.Contains(sum[0], "sources=1") || !strings.Contains(sum[0], "top_source=10.0.0.1/32") {
			t.Fatalf("summary %q", sum)
		}
		if strings.Contains(strings.Join(logs.lines(""), "\n"), "edge-agent test") {
			t.Fatal("a certificate's subject reached the log")
		}
	})
}
