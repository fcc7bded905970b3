package client

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

func startIngress(t *testing.T, cfg standin.Config) *standin.Server {
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

// stepsOf lists the steps a probe ran, with "-" for a skipped one and "!"
// for the failed one, e.g. "resolve connect -tls auth!".
func stepsOf(r ProbeResult) string {
	var s string
	for i, st := range r.Steps {
		if i > 0 {
			s += " "
		}
		switch {
		case st.Skipped:
			s += "-" + string(st.Step)
		case st.Err != nil:
			s += string(st.Step) + "!"
		default:
			s += string(st.Step)
		}
	}
	return s
}

func TestProbeACK(t *testing.T) {
	srv := startIngress(t, standin.Config{Token: "tok"})
	r := newClient(t, testConfig(srv.Addr())).Probe(sendCtx(t))
	if err := r.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
	if got := stepsOf(r); got != "resolve connect -tls auth" {
		t.Fatalf("steps = %q", got)
	}
	if got := r.Steps[3].Detail; got != "ACK" {
		t.Fatalf("auth detail = %q", got)
	}
	if r.PeerCertificate != nil {
		t.Fatal("a peer certificate without TLS")
	}
	if st := srv.Stats(); st.Batches != 0 {
		t.Fatalf("the probe sent %d batches", st.Batches)
	}
}

func TestProbeAuthFailed(t *testing.T) {
	srv := startIngress(t, standin.Config{Token: "the-right-one"})
	r := newClient(t, testConfig(srv.Addr())).Probe(sendCtx(t))
	if !errors.Is(r.Err(), transport.ErrAuthFailed) {
		t.Fatalf("Err = %v, want ErrAuthFailed", r.Err())
	}
	if got := stepsOf(r); got != "resolve connect -tls auth!" {
		t.Fatalf("steps = %q", got)
	}
	if got := r.Steps[3].Detail; got != "AUTH_FAILED" {
		t.Fatalf("auth detail = %q", got)
	}
}

func TestProbeRejected(t *testing.T) {
	srv := startIngress(t, standin.Config{Token: "tok", Faults: standin.Faults{Reject: true}})
	r := newClient(t, testConfig(srv.Addr())).Probe(sendCtx(t))
	if !errors.Is(r.Err(), transport.ErrRejected) {
		t.Fatalf("Err = %v, want ErrRejected", r.Err())
	}
	if got := stepsOf(r); got != "resolve connect -tls auth!" {
		t.Fatalf("steps = %q", got)
	}
	if got := r.Steps[3].Detail; got != "REJECTED" {
		t.Fatalf("auth detail = %q", got)
	}
}

func TestProbeClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	r := newClient(t, testConfig(addr)).Probe(sendCtx(t))
	if r.Err() == nil {
		t.Fatal("Err = nil for a closed port")
	}
	if got := stepsOf(r); got != "resolve connect!" {
		t.Fatalf("steps = %q", got)
	}
	if errors.Is(r.Err(), transport.ErrAuthFailed) || errors.Is(r.Err(), transport.ErrRejected) {
		t.Fatalf("Err = %v, an engine verdict for a closed port", r.Err())
	}
}

func TestProbeTLS(t *testing.T) {
	cert, caFile := selfSigned(t)
	srv := startTLSIngress(t, cert)
	tc, err := TLSOptions{Enabled: true, CAFile: caFile}.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := tlsTestConfig(srv.Addr(), tc)
	r := newClient(t, cfg).Probe(sendCtx(t))
	if err := r.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
	if got := stepsOf(r); got != "resolve connect tls auth" {
		t.Fatalf("steps = %q", got)
	}
	if r.PeerCertificate == nil || r.PeerCertificate.Subject.CommonName != "edgesocket test" {
		t.Fatalf("PeerCertificate = %v", r.PeerCertificate)
	}
}

func TestProbeTLSUnknownAuthority(t *testing.T) {
	cert, _ := selfSigned(t)
	srv := startTLSIngress(t, cert)
	_, otherCA := selfSigned(t) // a root that did not sign the engine's certificate
	tc, err := TLSOptions{Enabled: true, CAFile: otherCA}.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := tlsTestConfig(srv.Addr(), tc)
	r := newClient(t, cfg).Probe(sendCtx(t))
	if r.Err() == nil {
		t.Fatal("Err = nil with an untrusted engine certificate")
	}
	if got := stepsOf(r); got != "resolve connect tls!" {
		t.Fatalf("steps = %q", got)
	}
}

// TestProbeTimesEachStep checks which instants each duration spans, with a
// clock that advances one second per reading.
func TestProbeTimesEachStep(t *testing.T) {
	srv := startIngress(t, standin.Config{Token: "tok"})
	c := newClient(t, testConfig(srv.Addr()))
	var ticks int
	c.now = func() time.Time {
		ticks++
		return time.Unix(int64(ticks), 0)
	}
	r := c.Probe(sendCtx(t))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for _, st := range r.Steps {
		want := time.Second
		if st.Skipped {
			want = 0
		}
		if st.Took != want {
			t.Errorf("%s took %v, want %v", st.Step, st.Took, want)
		}
	}
}

func TestProbeAfterClose(t *testing.T) {
	srv := startIngress(t, standin.Config{Token: "tok"})
	c := newClient(t, testConfig(srv.Addr()))
	_ = c.Close()
	if r := c.Probe(sendCtx(t)); !errors.Is(r.Err(), transport.ErrClosed) {
		t.Fatalf("Err = %v, want ErrClosed", r.Err())
	}
	if st := srv.Stats(); st.Connections != 0 {
		t.Fatalf("a closed client connected %d times", st.Connections)
	}
}
