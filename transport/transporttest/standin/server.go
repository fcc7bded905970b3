package standin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/internal/linger"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Server is a running ingress. Create it with New, then Start.
type Server struct {
	cfg    Config
	log    *slog.Logger
	src    *enginemodel.Source
	faults atomic.Pointer[Faults]

	// slot is the single-collector token: a connection holds it from
	// accept until it ends.
	slot chan struct{}
	seq  atomic.Int64 // server-wide batch counter, for Faults

	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]struct{}
	started  bool
	closing  bool
	done     chan struct{} // closed by Close
	wg       sync.WaitGroup
	stats    counters
	closeErr error
	once     sync.Once
}

// New validates cfg. Nothing listens until Start.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	handler := cfg.Handler
	if handler == nil {
		handler = func(int64, []byte) {}
	}
	src, err := enginemodel.NewSource(enginemodel.SourceConfig{Sink: func(r enginemodel.Record) { handler(r.BatchID, r.Payload) }})
	if err != nil {
		return nil, fmt.Errorf("stand-in: %w", err)
	}
	s := &Server{
		src:   src,
		cfg:   cfg,
		log:   cfg.Logger,
		slot:  make(chan struct{}, 1),
		conns: make(map[net.Conn]struct{}),
		done:  make(chan struct{}),
	}
	f := cfg.Faults
	s.faults.Store(&f)
	return s, nil
}

// Start listens on Config.Addr and serves in the background. ctx bounds
// start-up only. A second Start is an error.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("stand-in: already started")
	}
	if s.closing {
		return errors.New("stand-in: closed")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("stand-in listen on %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.ln, s.started = ln, true
	s.wg.Add(1)
	go s.acceptLoop(ln)
	s.log.Info("edgesocket stand-in listening", slog.String("addr", ln.Addr().String()))
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

// Source is the engine model's source behind the server: tests take
// checkpoints on it (Snapshot, then CheckpointComplete) to have
// __COMMIT__ answer ACK:<watermark>, and read its Figures.
func (s *Server) Source() *enginemodel.Source { return s.src }

// SetFaults replaces the injected faults; it applies from the next request.
func (s *Server) SetFaults(f Faults) { s.faults.Store(&f) }

// Faults returns the injected faults in force.
func (s *Server) Faults() Faults { return *s.faults.Load() }

// Stats returns the counters so far.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// DropCollector closes the connection of the current collector, if any,
// without a reply: a link cut on demand.
func (s *Server) DropCollector() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

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
			s.log.Error("edgesocket ingress accept failed", slog.Any("error", err))
			// Avoid a hot loop on persistent errors such as EMFILE.
			select {
			case <-s.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if !s.track(conn) {
			_ = conn.Close()
			return
		}
		s.stats.connections.Add(1)
		s.wg.Add(1)
		go s.handle(conn)
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

// handle applies the single-collector policy, then serves the session.
func (s *Server) handle(conn net.Conn) {
	defer s.wg.Done()
	defer s.untrack(conn)
	if !s.Faults().Reject && s.acquire() {
		s.serve(conn)
		<-s.slot // free the ingress before lingering on the old socket
		linger.Close(conn)
		return
	}
	s.stats.rejected.Add(1)
	s.log.Warn("edgesocket ingress rejected a second collector", slog.String("remote", conn.RemoteAddr().String()))
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte(protocol.ReplyRejected + "\n")); err == nil {
		linger.Close(conn)
	}
}

// acquire takes the collector slot, waiting up to RejectGrace.
func (s *Server) acquire() bool {
	select {
	case s.slot <- struct{}{}:
		return true
	default:
	}
	if s.cfg.RejectGrace < 0 {
		return false
	}
	t := time.NewTimer(s.cfg.RejectGrace)
	defer t.Stop()
	select {
	case s.slot <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-s.done:
		return false
	}
}
