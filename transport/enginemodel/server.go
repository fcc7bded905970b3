package enginemodel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/edge-agent/edge-agent/transport/protocol"
)

// ServerConfig configures a Server. Zero values take the defaults.
type ServerConfig struct {
	// Addr to listen on. Default "127.0.0.1:0".
	Addr string
	// Session holds the token, decoder and observer of every session.
	Session SessionConfig
	// AcceptTimeout bounds the wait for the auth line (the engine's
	// accept_timeout_ms). Default 1s. An authenticated session has no
	// read timeout: the engine keeps idle collectors.
	AcceptTimeout time.Duration
	// MaxLineBytes bounds a request line; a longer one gets BAD_REQUEST
	// and the connection closes. Default protocol.DefaultMaxRequestBytes.
	MaxLineBytes int
	// WriteTimeout bounds writing one batch of replies. Default 10s.
	WriteTimeout time.Duration
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
}

// relistenPause is the wait between attempts to bind the port again
// after a collector left (another socket may hold it for a moment).
const relistenPause = 50 * time.Millisecond

// Server serves a Source over TCP as the engine does: one collector at a
// time, and while one holds the source the listening socket is closed,
// so a second collector's connect is refused. When the collector leaves
// the server listens again on the same port.
type Server struct {
	src *Source
	cfg ServerConfig
	log *slog.Logger

	mu      sync.Mutex
	ln      net.Listener // nil while a collector holds the source
	addr    string       // the bound address, kept across re-listens
	conn    net.Conn     // the connection being served, if any
	started bool
	closing bool
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	// onListen, in tests, hears every (re)bind.
	onListen func()
}

// NewServer validates cfg. Nothing listens until Start.
func NewServer(src *Source, cfg ServerConfig) (*Server, error) {
	if err := protocol.CheckToken(cfg.Session.Token); err != nil {
		return nil, fmt.Errorf("engine model server token: %w", err)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.AcceptTimeout <= 0 {
		cfg.AcceptTimeout = time.Second
	}
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = protocol.DefaultMaxRequestBytes
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{src: src, cfg: cfg, log: log, done: make(chan struct{})}, nil
}

// Start binds the address and serves in the background.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closing {
		return errors.New("engine model server: already started or closed")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("engine model server listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln, s.addr, s.started = ln, ln.Addr().String(), true
	s.wg.Add(1)
	go s.serveLoop(ln)
	s.log.Info("edgesocket engine model listening", slog.String("addr", s.addr))
	return nil
}

// Addr is the bound host:port once started, else "".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Close stops listening, ends the current session after the replies it
// owes and waits for the server's goroutines. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		close(s.done)
		if s.ln != nil {
			err = s.ln.Close()
		}
		if s.conn != nil {
			_ = s.conn.SetReadDeadline(time.Unix(1, 0))
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return err
}

// serveLoop accepts one connection at a time: the auth line under the
// accept timeout (the listener stays open, so others wait in the
// backlog), then, once authenticated, the listener closes for the whole
// session and reopens after it.
func (s *Server) serveLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return
			}
			s.log.Error("edgesocket engine model accept failed", slog.Any("error", err))
			if !s.pause() {
				return
			}
			continue
		}
		if !s.setConn(conn) {
			_ = conn.Close()
			return
		}
		ss := NewSession(s.src, s.cfg.Session)
		log := s.log.With(slog.String("remote", conn.RemoteAddr().String()))
		// Auth lines are short; the request limit applies after it.
		r := protocol.NewLineReader(conn, 4<<10)
		if s.admit(conn, ln, r, ss, log) {
			log.Info("edgesocket collector authenticated; listener closed")
			r.SetLimit(s.cfg.MaxLineBytes)
			s.converse(conn, r, ss, log)
			log.Info("edgesocket collector left")
		}
		s.endConn(conn)
		if !s.isListening() {
			if ln = s.relisten(); ln == nil {
				return
			}
		}
	}
}

func (s *Server) isClosing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// pause waits relistenPause; false when the server is closing.
func (s *Server) pause() bool {
	t := time.NewTimer(relistenPause)
	defer t.Stop()
	select {
	case <-s.done:
		return false
	case <-t.C:
		return true
	}
}

func (s *Server) setConn(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conn = conn
	return true
}

func (s *Server) endConn(conn net.Conn) {
	s.mu.Lock()
	s.conn = nil
	s.mu.Unlock()
	_ = conn.Close()
}

// relisten binds the same address again, retrying while the port is
// briefly taken; nil when the server is closing.
func (s *Server) relisten() net.Listener {
	for {
		ln, err := net.Listen("tcp", s.addr)
		if err == nil {
			s.mu.Lock()
			if s.closing {
				s.mu.Unlock()
				_ = ln.Close()
				return nil
			}
			s.ln = ln
			hook := s.onListen
			s.mu.Unlock()
			if hook != nil {
				hook()
			}
			return ln
		}
		s.log.Warn("edgesocket engine model cannot listen again yet", slog.String("addr", s.addr), slog.Any("error", err))
		if !s.pause() {
			return nil
		}
	}
}

// admit authenticates conn and answers its auth line. An accepted
// collector holds the source: the listener closes before the ACK leaves,
// so a collector that saw ACK knows the port is shut, as the engine
// stops listening after AUTH.
func (s *Server) admit(conn net.Conn, ln net.Listener, r *protocol.LineReader, ss *Session, log *slog.Logger) bool {
	reply, keep := s.authenticate(conn, r, ss, log)
	if keep {
		s.mu.Lock()
		_ = ln.Close()
		s.ln = nil
		s.mu.Unlock()
	}
	if reply == "" {
		return false
	}
	_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if _, err := conn.Write([]byte(reply + "\n")); err != nil {
		return false
	}
	return keep
}

// isListening reports whether the listener is open.
func (s *Server) isListening() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ln != nil
}

// authenticate reads the first line within the accept timeout and
// returns the reply; no line in time answers AUTH_FAILED. keep is true
// for an accepted collector.
func (s *Server) authenticate(conn net.Conn, r *protocol.LineReader, ss *Session, log *slog.Logger) (reply string, keep bool) {
	s.setReadDeadline(conn, time.Now().Add(s.cfg.AcceptTimeout))
	line, err := r.ReadRawLine()
	reply, keep = ss.AuthTimedOut(), false
	if err == nil {
		reply, keep = ss.HandleLine(line)
	} else {
		log.Warn("edgesocket auth: no token line in time", slog.Any("error", err))
	}
	if !keep {
		log.Warn("edgesocket auth refused", slog.String("reply", reply))
		return reply, false
	}
	s.setReadDeadline(conn, time.Time{})
	return reply, true
}

// setReadDeadline sets conn's read deadline unless Close has begun: then
// the deadline stays in the past so the session winds down.
func (s *Server) setReadDeadline(conn net.Conn, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		t = time.Unix(1, 0)
	}
	_ = conn.SetReadDeadline(t)
}

// converse answers requests in order, one reply line each, until the
// collector leaves, a read or write fails, the source's reader is
// restored or reset (the connection dies with it) or Close.
func (s *Server) converse(conn net.Conn, r *protocol.LineReader, ss *Session, log *slog.Logger) {
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-ss.Gone():
			log.Info("edgesocket reader restarted; dropping the collector")
			_ = conn.Close()
		case <-ended:
		}
	}()
	w := bufio.NewWriterSize(conn, 32<<10)
	write := func(reply string) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		_, _ = w.WriteString(reply)
		return w.WriteByte('\n') == nil
	}
	for {
		line, err := r.ReadRawLine()
		if err != nil {
			if errors.Is(err, protocol.ErrLineTooLong) {
				write(protocol.ReplyBadRequest)
				log.Warn("edgesocket request line too long; closing", slog.Any("error", err))
			}
			_ = w.Flush()
			return
		}
		reply, keep := ss.HandleLine(line)
		if reply != "" && !write(reply) {
			return
		}
		if !keep {
			_ = w.Flush()
			return
		}
		// Replies to pipelined requests leave together; flush before a
		// read that may block.
		if !r.LineBuffered() {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}
