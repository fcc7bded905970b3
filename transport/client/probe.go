package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// ProbeStep names one step of a Probe, in the order they run.
type ProbeStep string

const (
	StepResolve ProbeStep = "resolve" // look the endpoint's host up
	StepConnect ProbeStep = "connect" // open the TCP connection
	StepTLS     ProbeStep = "tls"     // TLS handshake (skipped without TLS)
	StepAuth    ProbeStep = "auth"    // send __AUTH__ and read the verdict
)

// StepResult is what one step found.
type StepResult struct {
	Step ProbeStep
	// Skipped is set when the step does not apply: TLS is not configured,
	// or a custom Dial resolves names itself.
	Skipped bool
	// Took is how long the step ran; 0 when skipped.
	Took time.Duration
	// Detail is what the step found (addresses, the TLS version, the
	// engine's reply). It never holds a secret.
	Detail string
	// Err is why the step failed; the steps after a failed one do not run.
	Err error
}

// ProbeResult is the outcome of Client.Probe.
type ProbeResult struct {
	Endpoint string
	// Steps are the steps that ran, the failed one last.
	Steps []StepResult
	// PeerCertificate is the engine's leaf certificate once the TLS
	// handshake succeeded; nil without TLS.
	PeerCertificate *x509.Certificate
}

// Err is the failed step's error, nil when the engine accepted the token.
func (r ProbeResult) Err() error {
	for _, s := range r.Steps {
		if s.Err != nil {
			return s.Err
		}
	}
	if len(r.Steps) == 0 {
		return errors.New("probe ran no step")
	}
	return nil
}

// Probe checks that the engine accepts this client, without sending any
// batch: it resolves the endpoint, connects, runs the TLS handshake when
// configured and authenticates, through the same code a Send uses to open
// a session, then closes the connection. Each step is timed. It neither
// touches the session Send keeps nor counts in Stats, so it may run
// beside Sends; on a closed client it fails with transport.ErrClosed.
//
// An engine serves one collector at a time: a probe while another
// collector is connected gets REJECTED, and a probe holds the engine for
// as long as it runs.
func (c *Client) Probe(ctx context.Context) ProbeResult {
	res := ProbeResult{Endpoint: c.cfg.Endpoint}
	if c.life.Err() != nil {
		res.Steps = append(res.Steps, StepResult{Step: StepResolve, Err: transport.ErrClosed})
		return res
	}
	// Close cuts a probe short, as it cuts a Send.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()

	run := func(step ProbeStep, fn func() (string, error)) bool {
		start := c.now()
		detail, err := fn()
		res.Steps = append(res.Steps, StepResult{Step: step, Took: c.now().Sub(start), Detail: detail, Err: err})
		return err == nil
	}
	skip := func(step ProbeStep, why string) {
		res.Steps = append(res.Steps, StepResult{Step: step, Skipped: true, Detail: why})
	}

	// One budget for resolving, dialing and the handshake, as connect has.
	dctx, dcancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer dcancel()
	if c.cfg.Dial != nil {
		// A proxy dialer may resolve the name at the far end: a local
		// lookup would test something the client never does.
		skip(StepResolve, "left to the configured dialer")
	} else if !run(StepResolve, func() (string, error) { return c.resolve(dctx) }) {
		return res
	}

	var raw net.Conn
	if !run(StepConnect, func() (string, error) {
		var err error
		if raw, err = c.dialEngine(dctx); err != nil {
			return "", err
		}
		return raw.RemoteAddr().String(), nil
	}) {
		return res
	}

	conn := raw
	if c.tls == nil {
		skip(StepTLS, "not configured")
	} else if !run(StepTLS, func() (string, error) {
		var err error
		if conn, err = c.secure(dctx, raw); err != nil {
			return "", err
		}
		st := conn.(*tls.Conn).ConnectionState()
		if len(st.PeerCertificates) > 0 {
			res.PeerCertificate = st.PeerCertificates[0]
		}
		return tls.VersionName(st.Version) + ", " + tls.CipherSuiteName(st.CipherSuite), nil
	}) {
		return res // secure closed raw
	}

	s := newSession(conn, raw)
	defer s.close()
	run(StepAuth, func() (string, error) {
		err := c.authenticate(ctx, s)
		return verdict(err), err
	})
	return res
}

// resolve looks the endpoint's host up and lists its addresses.
func (c *Client) resolve(ctx context.Context) (string, error) {
	host, _, err := net.SplitHostPort(c.cfg.Endpoint)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", c.cfg.Endpoint, err)
	}
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", host, err)
	}
	return strings.Join(addrs, ", "), nil
}

// verdict names the engine's answer to __AUTH__, or "" when there was
// none (the connection failed before a reply was read).
func verdict(err error) string {
	switch {
	case err == nil:
		return protocol.ReplyACK
	case errors.Is(err, transport.ErrAuthFailed):
		return protocol.ReplyAuthFailed
	case errors.Is(err, transport.ErrRejected):
		return protocol.ReplyRejected
	}
	return ""
}
