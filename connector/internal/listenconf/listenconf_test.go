package listenconf

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// Load: no TLS without cert-file, a server config with it, mTLS with a
// client CA, and each wrong combination or file named by its key.
func TestTLSLoad(t *testing.T) {
	dir := t.TempDir()
	pki := transporttest.NewPKI(t)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("no pem here"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		tls     TLS
		wantTLS bool
		mtls    bool
		errKey  string
	}{
		{"off", TLS{}, false, false, ""},
		{"blank cert-file is off", TLS{CertFile: " "}, false, false, ""},
		{"server", TLS{CertFile: pki.Server.CertFile, KeyFile: pki.Server.KeyFile}, true, false, ""},
		{"mtls", TLS{CertFile: pki.Server.CertFile, KeyFile: pki.Server.KeyFile, ClientCAFile: pki.CAFile}, true, true, ""},
		{"cert without key", TLS{CertFile: pki.Server.CertFile}, false, false, "tls"},
		{"key without cert", TLS{KeyFile: pki.Server.KeyFile}, false, false, "tls"},
		{"client CA without TLS", TLS{ClientCAFile: pki.CAFile}, false, false, "tls.client-ca-file"},
		{"missing cert", TLS{CertFile: filepath.Join(dir, "none"), KeyFile: pki.Server.KeyFile}, false, false, "tls"},
		{"missing client CA", TLS{CertFile: pki.Server.CertFile, KeyFile: pki.Server.KeyFile, ClientCAFile: filepath.Join(dir, "none")}, false, false, "tls.client-ca-file"},
		{"client CA not PEM", TLS{CertFile: pki.Server.CertFile, KeyFile: pki.Server.KeyFile, ClientCAFile: notPEM}, false, false, "tls.client-ca-file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc, err := c.tls.Load()
			if c.errKey != "" {
				var fe *input.FieldError
				if !errors.As(err, &fe) || fe.Key != c.errKey {
					t.Fatalf("err %v, want a FieldError keyed %s", err, c.errKey)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tc != nil) != c.wantTLS || c.tls.Enabled() != c.wantTLS {
				t.Fatalf("config %v, Enabled %v; want TLS %v", tc, c.tls.Enabled(), c.wantTLS)
			}
			if tc == nil {
				return
			}
			if tc.MinVersion != tls.VersionTLS12 || (tc.ClientAuth == tls.RequireAndVerifyClientCert) != c.mtls || (tc.ClientCAs != nil) != c.mtls {
				t.Fatalf("config: min version %x, client auth %v", tc.MinVersion, tc.ClientAuth)
			}
		})
	}
}

func TestChecks(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		errKey string
		want   string
	}{
		{"host:port", HostPort("listen", "127.0.0.1:80"), "", ""},
		{"any host", HostPort("listen", ":80"), "", ""},
		{"no port", HostPort("listen", "127.0.0.1"), "listen", "host:port"},
		{"empty port", HostPort("grpc-listen", "127.0.0.1:"), "grpc-listen", "host:port"},
		{"in range", Range("k", 5, 1, 5), "", ""},
		{"below", Range("k", 0, 1, 5), "k", "between 1 and 5, got 0"},
		{"above", Range("k", 6, 1, 5), "k", "between 1 and 5, got 6"},
		{"positive", Positive("t-ms", time.Millisecond), "", ""},
		{"zero", Positive("t-ms", 0), "t-ms", "> 0"},
		{"retry one second", RetryAfter(time.Second), "", ""},
		{"retry under a second", RetryAfter(999 * time.Millisecond), "retry-after-ms", "at least 1000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.errKey == "" {
				if c.err != nil {
					t.Fatal(c.err)
				}
				return
			}
			var fe *input.FieldError
			if !errors.As(c.err, &fe) || fe.Key != c.errKey || !strings.Contains(fe.Error(), c.want) {
				t.Fatalf("err %v, want key %s saying %q", c.err, c.errKey, c.want)
			}
		})
	}
}

func TestExposed(t *testing.T) {
	for _, c := range []struct {
		addr    string
		exposed bool
	}{
		{"127.0.0.1:80", false}, {"[::1]:80", false}, {"localhost:80", false}, {"LocalHost:80", false},
		{"0.0.0.0:80", true}, {":80", true}, {"10.1.2.3:80", true}, {"not an address", false},
	} {
		e := Exposed("listen", c.addr, "logs")
		if (e != nil) != c.exposed {
			t.Fatalf("%s: advice %v, want exposed %v", c.addr, e, c.exposed)
		}
		if e != nil && (e.Key != "listen" || !strings.Contains(e.Err.Error(), "logs cross the network in clear")) {
			t.Fatalf("%s: advice %v", c.addr, e)
		}
	}
}

func TestAnchorPaths(t *testing.T) {
	abs := filepath.Join(string(filepath.Separator), "etc", "ca.pem")
	tl := TLS{CertFile: "certs/a.pem", ClientCAFile: abs}
	tok := "token"
	AnchorPaths(filepath.Join(string(filepath.Separator), "opt"), append(tl.Files(), &tok)...)
	want := TLS{CertFile: filepath.Join(string(filepath.Separator), "opt", "certs", "a.pem"), ClientCAFile: abs}
	if tl != want || tok != filepath.Join(string(filepath.Separator), "opt", "token") {
		t.Fatalf("anchored %+v and %q", tl, tok)
	}
	AnchorPaths("", &tok)
	if tok != filepath.Join(string(filepath.Separator), "opt", "token") {
		t.Fatalf("empty base changed %q", tok)
	}
}
