package api

import (
	"context"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// http.tls files that change are served from the next handshake on,
// without a restart: a client pinned to the new certificate gets in (and
// one pinned to the old no longer does).
func TestTLSServesTheRotatedCertificate(t *testing.T) {
	cert := writeCert(t)
	srv, err := Start(Options{Source: &fakeSource{st: running()}, FileToken: testFileToken, Settings: Settings{Listen: "127.0.0.1:0", TLS: cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	// Pinned now, before the rotation: the old certificate's bytes.
	oldPin, err := NewClient(Settings{Listen: srv.Addr(), Token: testFileToken, TLS: cert})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oldPin.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	next := writeCert(t)
	transporttest.Cert{CertFile: cert.CertFile, KeyFile: cert.KeyFile}.Rotate(t, transporttest.Cert{CertFile: next.CertFile, KeyFile: next.KeyFile})
	newPin, err := NewClient(Settings{Listen: srv.Addr(), Token: testFileToken, TLS: next})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// A new connection each time: the pin is checked at the handshake.
		newPin.hc.CloseIdleConnections()
		if _, err := newPin.Status(context.Background()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rotated certificate was never served")
		}
	}
	oldPin.hc.CloseIdleConnections()
	if _, err := oldPin.Status(context.Background()); err == nil {
		t.Error("a client pinned to the old certificate still got in")
	}
}
