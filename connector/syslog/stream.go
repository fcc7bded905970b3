package syslog

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"
)

// serveListener accepts TCP/TLS connections from ln until stop.
func (in *Input) serveListener(ln net.Listener) {
	in.ln = ln
	a := ln.Addr()
	in.addr.Store(&a)
	in.budget.reopen()
	in.wg.Add(2)
	go in.accept(ln)
	go in.report(in.done)
}

// accept serves connections until the listener closes. Temporary accept
// failures (out of descriptors) are retried with a capped backoff.
func (in *Input) accept(ln net.Listener) {
	defer in.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			if in.stopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			in.st.errors.Add(1)
			in.log.Warn("syslog accept failed; retrying", slog.Any("error", err), slog.Duration("backoff", backoff))
			select {
			case <-in.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if s := in.admit(c); s != nil {
			in.wg.Add(1)
			go in.serve(s)
		}
	}
}

// admit registers c in the budget, evicting a silent connection for it
// or closing it (counted, and logged within the log limit).
func (in *Input) admit(c net.Conn) *slot {
	s, ev, why := in.budget.admit(c)
	if ev != nil {
		// Counted before the close: whoever sees the close sees it
		// counted.
		in.st.evicted.Add(1)
		_ = ev.c.Close()
		in.logs.warn(logEvicted, "syslog: connection budget full; a connection that had sent nothing was closed for a new one",
			slog.String("evicted_peer", ev.c.RemoteAddr().String()), slog.Int("max_connections", in.cfg.MaxConnections),
			slog.Int("max_connections_per_source", in.cfg.MaxConnectionsPerSource), slog.Int64("evicted_total", in.st.evicted.Load()))
	}
	if why == admitted {
		in.st.connsTotal.Add(1)
		return s
	}
	if why != refusedStopping {
		in.st.refused.Add(1)
	}
	_ = c.Close()
	switch why {
	case refusedFull:
		in.logs.warn(logRefused, "syslog connection refused: max-connections are open and every one has sent data",
			slog.String("peer", c.RemoteAddr().String()), slog.Int("max_connections", in.cfg.MaxConnections),
			slog.Int64("refused_total", in.st.refused.Load()))
	case refusedSource:
		in.logs.warn(logRefused, "syslog connection refused: its source has max-connections-per-source open, each having sent data",
			slog.String("peer", c.RemoteAddr().String()), slog.Int("max_connections_per_source", in.cfg.MaxConnectionsPerSource),
			slog.Int64("refused_total", in.st.refused.Load()))
	}
	return nil
}

// serve reads one connection's messages until it ends. A framing error
// closes it, logged with the reason: the stream cannot be resynchronised.
func (in *Input) serve(s *slot) {
	defer in.wg.Done()
	c := s.c
	defer func() {
		in.budget.release(s)
		_ = c.Close()
	}()
	peer := c.RemoteAddr().String()
	if in.pen != nil {
		if d := in.pen.wait(s.src, time.Now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-in.done:
				t.Stop()
				return
			case <-s.gone:
				t.Stop()
				return
			}
		}
	}
	// One deadline for the handshake and the first byte of data.
	if err := c.SetDeadline(time.Now().Add(in.cfg.FirstByteTimeout)); err != nil {
		in.connEnded(s, peer, err, false)
		return
	}
	var r io.Reader = c
	if in.tlsCfg != nil {
		tc := tls.Server(&firstByteConn{Conn: c, first: func() { in.budget.handshaking(s) }}, in.tlsCfg)
		if err := tc.Handshake(); err != nil {
			in.handshakeFailed(s, peer, err)
			return
		}
		if in.pen != nil {
			in.pen.succeeded(s.src)
		}
		_ = c.SetWriteDeadline(time.Time{})
		r = tc
	}
	cr := &connReader{r: r, c: c, idle: in.cfg.IdleTimeout, spoke: func() { in.budget.spoke(s) }}
	fr := newFramer(cr, in.cfg.MaxMessageBytes)
	h := in.newHandler(peer)
	for {
		msg, cut, err := fr.Next()
		if err != nil {
			in.connEnded(s, peer, err, cr.started)
			return
		}
		h.handle(msg, cut, true)
	}
}

// handshakeFailed counts a failed TLS handshake: a refused client
// certificate slows its source down; a silent client is a timeout.
func (in *Input) handshakeFailed(s *slot, peer string, err error) {
	var ne net.Error
	var verr *tls.CertificateVerificationError
	switch {
	case in.stopping() || errors.Is(err, net.ErrClosed) || isClosed(s.gone):
	case errors.As(err, &ne) && ne.Timeout():
		in.st.timedOut.Add(1)
		in.log.Debug("syslog TLS handshake not done within first-byte-timeout-ms; closed", slog.String("peer", peer))
	case errors.Is(err, io.EOF):
		// Closed by the client before a handshake: a port probe.
		in.log.Debug("syslog connection closed before its TLS handshake", slog.String("peer", peer))
	case in.pen != nil && errors.Is(err, errNoClientCert):
		in.st.authNoCert.Add(1)
		in.pen.failed(s.src, authNoCert, time.Now())
	case in.pen != nil && errors.As(err, &verr):
		in.st.authBadCert.Add(1)
		in.pen.failed(s.src, authBadCert, time.Now())
	default:
		in.st.errors.Add(1)
		in.logs.warn(logHandshake, "syslog TLS handshake failed", slog.String("peer", peer), slog.Any("error", err))
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// connEnded logs why a connection ended, unless it was closed by its
// sender, by an eviction or by stop; started says whether it had sent
// data.
func (in *Input) connEnded(s *slot, peer string, err error, started bool) {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), in.stopping(), errors.Is(err, net.ErrClosed), isClosed(s.gone):
		in.log.Debug("syslog connection closed", slog.String("peer", peer))
	case errors.As(err, &ne) && ne.Timeout() && !started:
		in.st.timedOut.Add(1)
		in.log.Debug("syslog connection sent nothing within first-byte-timeout-ms; closed", slog.String("peer", peer))
	case errors.As(err, &ne) && ne.Timeout():
		in.log.Info("syslog connection idle for idle-timeout-ms; closed", slog.String("peer", peer),
			slog.Duration("idle_timeout", in.cfg.IdleTimeout))
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrBadOctetCount), errors.Is(err, ErrTruncatedFrame):
		in.st.errors.Add(1)
		in.logs.warn(logFraming, "syslog connection closed: bad framing", slog.String("peer", peer), slog.Any("error", err),
			slog.Int("max_message_bytes", in.cfg.MaxMessageBytes))
	default:
		in.st.errors.Add(1)
		in.logs.warn(logConnFail, "syslog connection failed", slog.String("peer", peer), slog.Any("error", err))
	}
}

// connReader holds the first-byte deadline until data arrives, then
// reports it (the connection can no longer be evicted) and keeps an idle
// deadline before each read (none when idle is 0).
type connReader struct {
	r       io.Reader
	c       net.Conn
	idle    time.Duration
	spoke   func()
	started bool
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.started && r.idle > 0 {
		if err := r.c.SetReadDeadline(time.Now().Add(r.idle)); err != nil {
			return 0, fmt.Errorf("set read deadline: %w", err)
		}
	}
	n, err := r.r.Read(p)
	if n > 0 && !r.started {
		r.started = true
		r.spoke()
		if r.idle == 0 {
			if derr := r.c.SetReadDeadline(time.Time{}); derr != nil && err == nil {
				err = fmt.Errorf("clear read deadline: %w", derr)
			}
		}
	}
	return n, err
}

// firstByteConn calls first once its first byte was read: a TLS client
// has begun its handshake.
type firstByteConn struct {
	net.Conn
	first func()
	seen  bool
}

func (c *firstByteConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.seen {
		c.seen = true
		c.first()
	}
	return n, err
}
