package client

import (
	"bytes"
	"crypto/tls"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// The client certificate Build loads is read again when its files change:
// the next handshake presents the rotated one, with the same *tls.Config
// (the output's and the OpAMP client's).
func TestBuildReloadsTheClientCertificate(t *testing.T) {
	server := transporttest.SelfSigned(t, time.Hour)
	first := transporttest.SelfSigned(t, time.Hour)
	second := transporttest.SelfSigned(t, time.Hour)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{server.Pair},
		ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	presented := make(chan []byte, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			if tc.Handshake() == nil && len(tc.ConnectionState().PeerCertificates) > 0 {
				presented <- tc.ConnectionState().PeerCertificates[0].Raw
			}
			c.Close()
		}
	}()
	cfg, err := TLSOptions{Enabled: true, CAFile: server.CertFile, CertFile: first.CertFile, KeyFile: first.KeyFile}.Build()
	if err != nil {
		t.Fatal(err)
	}
	handshake := func() []byte {
		t.Helper()
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		select {
		case raw := <-presented:
			return raw
		case <-time.After(5 * time.Second):
			t.Fatal("the server saw no client certificate")
		}
		return nil
	}
	if got := handshake(); !bytes.Equal(got, first.Leaf.Raw) {
		t.Fatal("the first handshake did not present the configured certificate")
	}
	first.Rotate(t, second)
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Equal(handshake(), second.Leaf.Raw) {
		if time.Now().After(deadline) {
			t.Fatal("the rotated client certificate was never presented")
		}
	}
}
