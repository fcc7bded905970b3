package relay

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/edge-agent/edge-agent/transport/internal/connset"
	"github.com/edge-agent/edge-agent/transport/ratelog"
)

// Server is a running relay listener. Create it with New, then Start.
type Server struct {
	cfg    Config
	log    *slog.Logger
	tokens tokens

	sessions chan struct{} // a slot per authenticated collector
	pre      *preauth
	pen      *penalties

	set        *connset.Set
	done       <-chan struct{} // closed when Close begins
	stats      counters
	collectors *collectors

	// Rate-limited warnings of floods a bad client can cause.
	warnFull, warnDecode, warnLine, warnOwed ratelog.Warner

	// listen, when set (tests only), replaces the TCP listener on
	// Config.Addr: an in-process one lets a test run under a fake clock.
	listen func() (net.Listener, error)
}

// New validates cfg. Nothing listens until Start.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		tokens:     newTokens(cfg.Tokens),
		sessions:   make(chan struct{}, cfg.MaxConnections),
		pre:        newPreauth(cfg.MaxHandshakes, cfg.MaxHandshakesPerSource),
		pen:        newPenalties(cfg.AuthFailDelay, cfg.AuthFailDelayMax, time.Now),
		set:        connset.New(cfg.Logger, "edgesocket relay"),
		collectors: newCollectors(),
	}
	s.done = s.set.Done()
	return s, nil
}

// Start listens on Config.Addr and serves in the background. ctx bounds
// start-up only. A second Start is an error.
func (s *Server) Start(ctx context.Context) error {
	ln, err := s.set.Start(func() (net.Listener, error) {
		var ln net.Listener
		var err error
		if s.listen != nil {
			ln, err = s.listen()
		} else {
			var lc net.ListenConfig
			ln, err = lc.Listen(ctx, "tcp", s.cfg.Addr)
		}
		if err != nil {
			return nil, fmt.Errorf("relay listen on %s: %w", s.cfg.Addr, err)
		}
		if s.cfg.TLS != nil {
			ln = tls.NewListener(ln, s.cfg.TLS)
		}
		return ln, nil
	}, s.admit)
	if err != nil {
		if errors.Is(err, connset.ErrStarted) || errors.Is(err, connset.ErrClosed) {
			return fmt.Errorf("relay: %w", err)
		}
		return err
	}
	s.set.Go(s.reportLoop)
	s.log.Info("edgesocket relay listening", slog.String("addr", ln.Addr().String()))
	return nil
}

// Addr is the listening address (host:port) once started, else "".
func (s *Server) Addr() string { return s.set.Addr() }

// Stats returns the counters so far.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Unauthenticated is the number of connections in the pre-authentication
// budget now.
func (s *Server) Unauthenticated() int { return s.pre.len() }

// Close stops listening, lets each session finish writing the replies it
// owes, closes every connection and waits for all goroutines to end.
// It is idempotent.
func (s *Server) Close() error { return s.set.Close(closeGrace) }

// closeGrace is how long Close lets sessions write the replies they owe
// before cutting connections whose peers do not read.
const closeGrace = 2 * time.Second

// admit runs on the accept loop: every connection gets a place in the
// pre-authentication budget, evicting an older one at its bounds.
func (s *Server) admit(conn net.Conn) {
	accepted := time.Now()
	s.stats.connections.Add(1)
	h, victim := s.pre.admit(conn, sourceOf(conn))
	if victim != nil {
		evict(victim)
	}
	s.set.Go(func() { s.handle(h, accepted) })
}

// reportLoop logs the failed authentications on a timer.
func (s *Server) reportLoop() {
	t := time.NewTicker(s.cfg.AuthLogInterval)
	defer t.Stop()
	var rep authReport
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			rep.report(s.log, s.Stats(), s.pen.sources())
		}
	}
}

// replyBufferBytes is the kernel send buffer of a collector connection.
// Replies are about ten bytes: this holds far more than MaxInFlight of
// them, and a fixed size keeps the kernel from growing it to megabytes per
// connection for a collector that does not read, so such a collector
// meets WriteTimeout soon.
const replyBufferBytes = 16 << 10

func setReplyBuffer(conn net.Conn) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(replyBufferBytes)
	}
}

// isClosing reports whether Close has begun.
func (s *Server) isClosing() bool { return s.set.Closing() }

func (s *Server) untrack(conn net.Conn) { s.set.Untrack(conn) }

// setReadDeadline sets conn's read deadline unless Close has begun, in
// which case the deadline stays in the past so the session winds down.
func (s *Server) setReadDeadline(conn net.Conn, t time.Time) { s.set.SetReadDeadline(conn, t) }
