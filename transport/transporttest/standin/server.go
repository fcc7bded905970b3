package standin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/internal/connset"
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

	set   *connset.Set
	done  <-chan struct{} // closed when Close begins
	stats counters
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
		src:  src,
		cfg:  cfg,
		log:  cfg.Logger,
		slot: make(chan struct{}, 1),
		set:  connset.New(cfg.Logger, "edgesocket ingress"),
	}
	s.done = s.set.Done()
	f := cfg.Faults
	s.faults.Store(&f)
	return s, nil
}

// Start listens on Config.Addr and serves in the background. ctx bounds
// start-up only. A second Start is an error.
func (s *Server) Start(ctx context.Context) error {
	ln, err := s.set.Start(func() (net.Listener, error) {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("stand-in listen on %s: %w", s.cfg.Addr, err)
		}
		if s.cfg.TLS != nil {
			ln = tls.NewListener(ln, s.cfg.TLS)
		}
		return ln, nil
	}, func(conn net.Conn) {
		s.stats.connections.Add(1)
		s.set.Go(func() { s.handle(conn) })
	})
	if err != nil {
		if errors.Is(err, connset.ErrStarted) || errors.Is(err, connset.ErrClosed) {
			return fmt.Errorf("stand-in: %w", err)
		}
		return err
	}
	s.log.Info("edgesocket stand-in listening", slog.String("addr", ln.Addr().String()))
	return nil
}

// Addr is the listening address (host:port) once started, else "".
func (s *Server) Addr() string { return s.set.Addr() }

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
func (s *Server) DropCollector() { s.set.CloseConns() }

// Close stops listening, lets each session finish writing the replies it
// owes, closes every connection and waits for all goroutines to end.
// It is idempotent.
func (s *Server) Close() error { return s.set.Close(closeGrace) }

// closeGrace is how long Close lets sessions write the replies they owe
// before cutting connections whose peers do not read.
const closeGrace = 2 * time.Second

// handle applies the single-collector policy, then serves the session.
func (s *Server) handle(conn net.Conn) {
	defer s.set.Untrack(conn)
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
