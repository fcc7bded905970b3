package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

func startEngine(t *testing.T, cfg standin.Config) *standin.Server {
	t.Helper()
	srv, err := standin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func transportConfig(endpoint, token, extra string) string {
	return "input:\n  type: file\n  paths: [\"in/*.log\"]\noutput:\n  type: transport\n  endpoint: " +
		endpoint + "\n  token: " + token + "\n" + extra
}

func TestCheckOutputAccepted(t *testing.T) {
	srv := startEngine(t, standin.Config{Token: "s3cret-token"})
	e := newTestEnv(t)
	e.write("config/agent.yaml", transportConfig(srv.Addr(), "s3cret-token", ""))
	if code := e.run("check", "output"); code != exitcode.OK {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, e.stdout.String(), e.stderr.String())
	}
	out := e.stdout.String()
	for _, want := range []string{"resolve  OK", "connect  OK", "tls      SKIP", "output.tls.enabled is false", "auth     OK", "ACK", "OK: the engine at " + srv.Addr()} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+e.stderr.String(), "s3cret-token") {
		t.Error("check output printed the token")
	}
	if st := srv.Stats(); st.Batches != 0 {
		t.Errorf("check output sent %d batches", st.Batches)
	}
}

func TestCheckOutputWrongToken(t *testing.T) {
	srv := startEngine(t, standin.Config{Token: "the-engines-token"})
	e := newTestEnv(t)
	cfg := e.write("elsewhere/agent.yaml", transportConfig(srv.Addr(), "s3cret-token", ""))
	if code := e.run("check", "output", "--config", cfg); code != exitcode.AuthFailed {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitcode.AuthFailed, e.stderr.String())
	}
	if !strings.Contains(e.stdout.String(), "auth     FAIL") || !strings.Contains(e.stdout.String(), "AUTH_FAILED") {
		t.Errorf("stdout:\n%s", e.stdout.String())
	}
	if !strings.Contains(e.stderr.String(), "fix: output.token must equal the EdgeSocket source's token") {
		t.Errorf("stderr lacks the fix:\n%s", e.stderr.String())
	}
	if strings.Contains(e.stdout.String()+e.stderr.String(), "s3cret-token") {
		t.Error("check output printed the token")
	}
}

func TestCheckOutputRejected(t *testing.T) {
	srv := startEngine(t, standin.Config{Token: "tok", Faults: standin.Faults{Reject: true}})
	e := newTestEnv(t)
	e.vars["EDGE_AGENT_CONFIG"] = e.write("env.yaml", transportConfig(srv.Addr(), "tok", ""))
	if code := e.run("check", "output"); code != exitcode.Failure {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitcode.Failure, e.stderr.String())
	}
	if !strings.Contains(e.stderr.String(), "one collector at a time") {
		t.Errorf("stderr lacks the fix:\n%s", e.stderr.String())
	}
}

func TestCheckOutputClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	e := newTestEnv(t)
	cfg := e.write("config/agent.yaml", transportConfig(addr, "tok", ""))
	if code := e.run("check", "output", cfg); code != exitcode.Failure {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitcode.Failure, e.stderr.String())
	}
	if !strings.Contains(e.stdout.String(), "connect  FAIL") || strings.Contains(e.stdout.String(), "auth") {
		t.Errorf("stdout:\n%s", e.stdout.String())
	}
	if !strings.Contains(e.stderr.String(), "fix: nothing listens on "+addr) {
		t.Errorf("stderr lacks the fix:\n%s", e.stderr.String())
	}
}

func TestCheckOutputTLS(t *testing.T) {
	tc := transporttest.SelfSigned(t, 365*24*time.Hour)
	cert, caFile := tc.Pair, tc.CertFile
	srv := startEngine(t, standin.Config{Token: "tok", TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	e := newTestEnv(t)
	e.write("config/agent.yaml", transportConfig(srv.Addr(), "tok", "  tls:\n    enabled: true\n    ca-file: "+caFile+"\n"))
	if code := e.run("check", "output"); code != exitcode.OK {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, e.stdout.String(), e.stderr.String())
	}
	out := e.stdout.String()
	for _, want := range []string{"tls      OK", "TLS 1.3", `peer certificate: subject "CN=edgesocket test"`, "expires "} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}

	// The same engine without output.tls: the handshake is missing, and
	// the engine answers nothing the client understands.
	e.write("config/agent.yaml", transportConfig(srv.Addr(), "tok", ""))
	if code := e.run("check", "output"); code != exitcode.Failure {
		t.Fatalf("plain TCP to a TLS engine: exit %d, stdout %s", code, e.stdout.String())
	}
	if !strings.Contains(e.stderr.String(), "output.tls.enabled") {
		t.Errorf("stderr does not point at output.tls.enabled:\n%s", e.stderr.String())
	}
}

func TestCheckOutputConsole(t *testing.T) {
	e := newTestEnv(t)
	e.write("config/agent.yaml", "input:\n  type: file\n  paths: [\"in/*.log\"]\noutput:\n  type: console\n")
	if code := e.run("check", "output"); code != exitcode.OK {
		t.Fatalf("exit %d, stderr %s", code, e.stderr.String())
	}
	if !strings.Contains(e.stdout.String(), "nothing to check") {
		t.Errorf("stdout: %q", e.stdout.String())
	}
}

func TestCheckOutputInvalidConfig(t *testing.T) {
	e := newTestEnv(t)
	e.write("config/agent.yaml", transportConfig("no-port", "tok", ""))
	if code := e.run("check", "output"); code != exitcode.Config {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitcode.Config, e.stderr.String())
	}
	if !strings.Contains(e.stderr.String(), "output.endpoint") || !strings.Contains(e.stderr.String(), "INVALID") {
		t.Errorf("stderr: %s", e.stderr.String())
	}
	if code := e.run("check", "output", filepath.Join(e.home, "missing.yaml")); code != exitcode.Config {
		t.Fatalf("missing file: exit %d", code)
	}
	if code := e.run("check", "output", "a.yaml", "b.yaml"); code != exitcode.Usage {
		t.Fatalf("two files: exit %d", code)
	}
}

func TestCertLineWarnsOfExpiry(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	cert := func(notAfter time.Time) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: "engine"}, Issuer: pkix.Name{CommonName: "ca"}, NotAfter: notAfter}
	}
	tests := []struct {
		notAfter time.Time
		want     string
		not      string
	}{
		{now.Add(-time.Hour), "(EXPIRED)", "renew"},
		{now.Add(10 * 24 * time.Hour), "(in 10 days: renew it)", "EXPIRED"},
		{now.Add(400 * 24 * time.Hour), "expires 2027-07-06 00:00:00 UTC", "renew"},
	}
	for _, tt := range tests {
		line := certLine(cert(tt.notAfter), now)
		if !strings.Contains(line, tt.want) || strings.Contains(line, tt.not) || !strings.Contains(line, `subject "CN=engine"`) {
			t.Errorf("certLine(%v) = %q, want %q and not %q", tt.notAfter, line, tt.want, tt.not)
		}
	}
}

// With output.endpoints every endpoint is probed: OK only when each one
// accepts the token, else the exit code of the first that does not.
func TestCheckOutputEachEndpoint(t *testing.T) {
	good := startEngine(t, standin.Config{Token: "s3cret-token"})
	wrong := startEngine(t, standin.Config{Token: "the-engines-token"})
	e := newTestEnv(t)
	list := func(addrs ...string) string {
		return "input:\n  type: file\n  paths: [\"in/*.log\"]\noutput:\n  type: transport\n  endpoints: [" +
			strings.Join(addrs, ", ") + "]\n  token: s3cret-token\n"
	}
	e.write("config/agent.yaml", list(good.Addr(), wrong.Addr()))
	if code := e.run("check", "output"); code != exitcode.AuthFailed {
		t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, exitcode.AuthFailed, e.stdout.String(), e.stderr.String())
	}
	out := e.stdout.String()
	for _, want := range []string{"2 endpoints", "endpoint " + good.Addr(), "endpoint " + wrong.Addr(), "auth     OK", "auth     FAIL"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if good.Stats().Batches != 0 || wrong.Stats().Batches != 0 {
		t.Error("check output sent batches")
	}
}
