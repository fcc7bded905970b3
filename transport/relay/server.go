package relay

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

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

	mu         sync.Mutex
	ln         net.Listener
	conns      map[net.Conn]struct{}
	started    bool
	closing    bool
	done       chan struct{} // closed by Close
	wg         sync.WaitGroup
	stats      counters
	collectors *collectors
	closeErr   error
	once       sync.Once

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
		conns:      make(map[net.Conn]struct{}),
		done:       make(chan struct{}),
		collectors: newCollectors(),
	}
	return s, nil
}

// Start listens on Config.Addr and serves in the background. ctx bounds
// start-up only. A second Start is an error.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("relay: already started")
	}
	if s.closing {
		return errors.New("relay: closed")
	}
	var ln net.Listener
	var err error
	if s.listen != nil {
		ln, err = s.listen()
	} else {
		var lc net.ListenConfig
		ln, err = lc.Listen(ctx, "tcp", s.cfg.Addr)
	}
	if err != nil {
		return fmt.Errorf("relay listen on %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.ln, s.started = ln, true
	s.wg.Add(2)
	go s.acceptLoop(ln)
	go s.reportLoop()
	s.log.Info("edgesocket relay listening", slog.String("addr", ln.Addr().String()))
	return nil
}

// Addr is the listening address (host:port) once started, else "".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Unauthenticated is the number of connections in the pre-authentication
// budget now.
func (s *Server) Unauthenticated() int { return s.pre.len() }

// Close stops listening, lets each session finish writing the replies it
// owes, closes every connection and waits for all goroutines to end.
// It is idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		close(s.done)
		if s.ln != nil {
			s.closeErr = s.ln.Close()
		}
		// Wake blocked reads; sessions then flush and close themselves.
		for c := range s.conns {
			_ = c.SetReadDeadline(time.Unix(1, 0))
		}
		s.mu.Unlock()

		finished := make(chan struct{})
		go func() { s.wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(2 * time.Second):
			// A peer that does not read its replies blocks our writes.
			s.mu.Lock()
			for c := range s.conns {
				_ = c.Close()
			}
			s.mu.Unlock()
			<-finished
		}
	})
	return s.closeErr
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error("edgesocket relay accept failed", slog.Any("error", err))
			// Avoid a hot loop on persistent errors such as EMFILE.
			select {
			case <-s.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		s.admit(conn)
	}
}

// admit runs on the accept loop: every connection gets a place in the
// pre-authentication budget, evicting an older one at its bounds.
func (s *Server) admit(conn net.Conn) {
	accepted := time.Now()
	if !s.track(conn) {
		_ = conn.Close()
		return
	}
	s.stats.connections.Add(1)
	h, victim := s.pre.admit(conn, sourceOf(conn))
	if victim != nil {
		evict(victim)
	}
	s.wg.Add(1)
	go s.handle(h, accepted)
}

// reportLoop logs the failed authentications on a timer.
func (s *Server) reportLoop() {
	defer s.wg.Done()
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
func (s *Server) isClosing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// track registers conn so Close can reach it; false once closing.
func (s *Server) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[conn] = struct{}{}
	return true
}

func (s *Server) untrack(conn net.Conn) {
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
	_ = conn.Close()
}

// setReadDeadline sets conn's read deadline unless Close has begun, in
// which case the deadline stays in the past so the session winds down.
func (s *Server) setReadDeadline(conn net.Conn, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		t = time.Unix(1, 0)
	}
	_ = conn.SetReadDeadline(t)
}
