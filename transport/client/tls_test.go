package client

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// selfSigned is the engine's certificate for 127.0.0.1 and the CA file a
// client trusts it with.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	c := transporttest.SelfSigned(t, time.Hour)
	return c.Pair, c.CertFile
}

func startTLSIngress(t *testing.T, cert tls.Certificate) *standin.Server {
	t.Helper()
	srv, err := standin.New(standin.Config{Token: "tok", TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func TestTLS(t *testing.T) {
	cert, caFile := selfSigned(t)
	srv := startTLSIngress(t, cert)
	tc, err := TLSOptions{Enabled: true, CAFile: caFile}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if tc.MinVersion != tls.VersionTLS12 {
		t.Fatalf("MinVersion = %x", tc.MinVersion)
	}
	cfg := tlsTestConfig(srv.Addr(), tc)
	c := newClient(t, cfg)
	res, err := c.Send(sendCtx(t), batches(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("%+v", r)
		}
	}
}

// tlsTestConfig is testConfig over TLS. A handshake under the race
// detector on a loaded machine can take seconds: the timeouts only bound a
// hung test, so they are far beyond that, and a failed verification is
// still told from a slow handshake.
func tlsTestConfig(endpoint string, tc *tls.Config) Config {
	cfg := testConfig(endpoint)
	cfg.TLS = tc
	cfg.ConnectTimeout = 30 * time.Second
	cfg.ReadTimeout = 30 * time.Second
	return cfg
}

func TestTLSHandshakeFailure(t *testing.T) {
	cert, _ := selfSigned(t)
	srv := startTLSIngress(t, cert)
	tc, err := TLSOptions{Enabled: true}.Build() // system roots do not know our CA
	if err != nil {
		t.Fatal(err)
	}
	cfg := tlsTestConfig(srv.Addr(), tc)
	cfg.MaxReconnectCycles = 1
	c := newClient(t, cfg)
	res, err := c.Send(sendCtx(t), batches(1))
	if !errors.Is(err, transport.ErrUnavailable) || res[0].Outcome != transport.NotSent {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), "tls handshake with "+srv.Addr()) {
		t.Fatalf("error does not explain the handshake failure: %v", err)
	}
}

func TestTLSOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	_ = os.WriteFile(junk, []byte("not pem"), 0o600)
	for _, tt := range []struct {
		o    TLSOptions
		want string
	}{
		{TLSOptions{Enabled: true, CAFile: filepath.Join(dir, "missing.pem")}, "tls ca file"},
		{TLSOptions{Enabled: true, CAFile: junk}, "no PEM certificate"},
		{TLSOptions{Enabled: true, CertFile: junk}, "key-file: required when cert-file is set"},
		{TLSOptions{Enabled: true, KeyFile: junk}, "cert-file: required when key-file is set"},
		{TLSOptions{Enabled: true, CertFile: junk, KeyFile: junk}, "tls client certificate"},
	} {
		if _, err := tt.o.Build(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.o, err, tt.want)
		}
	}
}

// TLS off ignores every other option, unreadable files included: the
// agent keeps output.tls.* written out with enabled: false.
func TestTLSOptionsDisabled(t *testing.T) {
	o := TLSOptions{CAFile: "/does/not/exist", CertFile: "c.pem"}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if tc, err := o.Build(); tc != nil || err != nil {
		t.Errorf("Build = %v, %v; want nil, nil", tc, err)
	}
}

func TestTLSOptionsValidateNamesKeys(t *testing.T) {
	for _, tt := range []struct {
		o       TLSOptions
		wantKey string
	}{
		{TLSOptions{Enabled: true}, ""},
		{TLSOptions{Enabled: true, CertFile: "c", KeyFile: "k"}, ""},
		{TLSOptions{Enabled: true, CertFile: "c"}, "key-file"},
		{TLSOptions{Enabled: true, KeyFile: "k"}, "cert-file"},
	} {
		err := tt.o.Validate()
		var fe *transport.FieldError
		switch {
		case tt.wantKey == "" && err != nil:
			t.Errorf("%+v: %v", tt.o, err)
		case tt.wantKey != "" && (!errors.As(err, &fe) || fe.FieldKey() != tt.wantKey):
			t.Errorf("%+v: err = %v, want a *transport.FieldError for %s", tt.o, err, tt.wantKey)
		}
	}
}
