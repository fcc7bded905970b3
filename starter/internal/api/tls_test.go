package api

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// With http.tls the API speaks HTTPS; status and db on this host trust
// exactly the configured certificate (its names are for other hosts: they
// dial loopback) and nothing else.
// writeCert is a self-signed certificate and key for the API's TLS.
func writeCert(t *testing.T) TLSSettings {
	t.Helper()
	c := transporttest.SelfSigned(t, time.Hour)
	return TLSSettings{CertFile: c.CertFile, KeyFile: c.KeyFile}
}

func TestTLSServesHTTPSToAPinnedClient(t *testing.T) {
	cert := writeCert(t)
	srv, err := Start(Options{Source: &fakeSource{st: running()}, FileToken: testFileToken, Settings: Settings{Listen: "127.0.0.1:0", TLS: cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())

	c, err := NewClient(Settings{Listen: srv.Addr(), Token: testFileToken, TLS: cert})
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
	other := writeCert(t)
	c2, err := NewClient(Settings{Listen: srv.Addr(), Token: testFileToken, TLS: other})
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
	cert := writeCert(t)
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
