package ingress

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Peer is the collector a deferred batch came from.
type Peer struct {
	// Name is the name of the token it presented.
	Name string
	// Remote is its address (host:port).
	Remote string
}

// multi is the multi-collector mode's state: slots and the tokens,
// hashed once so the constant-time check does not hash them per
// connection.
type multi struct {
	handshakes chan struct{} // a slot per connection not yet authenticated
	sessions   chan struct{} // a slot per authenticated collector
	tokens     []namedHash
	authLog    rateLog
}

type namedHash struct {
	name string
	sum  [sha256.Size]byte
}

func newMulti(cfg Config) *multi {
	m := &multi{
		handshakes: make(chan struct{}, cfg.MaxHandshakes),
		sessions:   make(chan struct{}, cfg.MaxConnections),
		authLog:    rateLog{every: 10 * time.Second},
	}
	tokens := cfg.Tokens
	if len(tokens) == 0 {
		tokens = []Token{{Name: "default", Value: cfg.Token}}
	}
	for _, t := range tokens {
		m.tokens = append(m.tokens, namedHash{name: t.Name, sum: sha256.Sum256([]byte(t.Value))})
	}
	return m
}

// match returns the name of the token presented, comparing it with every
// configured token in constant time (no early exit: the time does not
// tell which one, or how close, matched).
func (m *multi) match(got []byte) (string, bool) {
	sum := sha256.Sum256(got)
	name, found := "", 0
	for _, t := range m.tokens {
		eq := subtle.ConstantTimeCompare(sum[:], t.sum[:])
		if eq == 1 && found == 0 {
			name = t.name
		}
		found |= eq
	}
	return name, found == 1
}

// admitMulti runs on the accept loop: a connection beyond MaxHandshakes
// is refused there and then, without a goroutine, so a flood costs no
// memory per attempt. The refusal is REJECTED on plain TCP; a TLS
// connection is closed (a reply would need a handshake first).
func (s *Server) admitMulti(conn net.Conn) {
	select {
	case s.multi.handshakes <- struct{}{}:
	default:
		s.stats.rejected.Add(1)
		s.refuseFlood(conn)
		return
	}
	setReplyBuffer(conn)
	if !s.track(conn) {
		<-s.multi.handshakes
		_ = conn.Close()
		return
	}
	s.stats.connections.Add(1)
	s.wg.Add(1)
	go s.handleMulti(conn)
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

// refuseFlood answers a connection the server has no room for. The write
// goes to an empty socket buffer and does not block; the deadline is a
// guard.
func (s *Server) refuseFlood(conn net.Conn) {
	if _, isTLS := conn.(*tls.Conn); !isTLS {
		_ = conn.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, _ = conn.Write([]byte(protocol.ReplyRejected + "\n"))
	}
	_ = conn.Close()
	s.multi.authLog.log(s.log, "edgesocket ingress at its bound of connections being authenticated; refusing new ones",
		slog.Int("max_handshakes", s.cfg.MaxHandshakes))
}

// readBufferBytes is each connection's read buffer: small, because it is
// per connection; a longer line is still read whole, up to MaxLineBytes.
const readBufferBytes = 4 << 10

// maxAuthLineBytes bounds the auth line, whatever MaxLineBytes is: a
// connection not yet authenticated must not make the server buffer much.
const maxAuthLineBytes = 4 << 10

// handleMulti authenticates, takes a collector slot and serves the
// session pipelined.
func (s *Server) handleMulti(conn net.Conn) {
	defer s.wg.Done()
	defer s.untrack(conn)
	r := protocol.NewLineReaderSize(conn, s.cfg.MaxLineBytes, readBufferBytes)
	name, ok := s.authenticateMulti(conn, r)
	<-s.multi.handshakes
	if !ok {
		return
	}
	select {
	case s.multi.sessions <- struct{}{}:
		s.setReadDeadline(conn, time.Time{})
		s.stats.sessions.Add(1)
		_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := conn.Write([]byte(protocol.ReplyACK + "\n")); err != nil {
			<-s.multi.sessions
			return
		}
	default:
		s.stats.rejected.Add(1)
		s.log.Warn("edgesocket ingress at max connections; collector rejected",
			slog.String("remote", conn.RemoteAddr().String()), slog.String("token_name", name),
			slog.Int("max_connections", s.cfg.MaxConnections))
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write([]byte(protocol.ReplyRejected + "\n"))
		return
	}
	defer func() { <-s.multi.sessions }()
	p := newPipe(s, conn, r, Peer{Name: name, Remote: conn.RemoteAddr().String()})
	p.run()
}

// authenticateMulti reads the first line within AuthTimeout and answers
// AUTH_FAILED to a wrong one (the caller answers ACK or REJECTED). Failures are logged at WARN, rate-limited, without
// what was presented.
func (s *Server) authenticateMulti(conn net.Conn, r *protocol.LineReader) (string, bool) {
	remote := conn.RemoteAddr().String()
	s.setReadDeadline(conn, time.Now().Add(s.cfg.AuthTimeout))
	r.SetLimit(maxAuthLineBytes)
	line, err := r.ReadRawLine()
	r.SetLimit(s.cfg.MaxLineBytes)
	fail := func(why string, err error) (string, bool) {
		s.stats.authFailures.Add(1)
		attrs := []any{slog.String("remote", remote), slog.String("reason", why)}
		if err != nil {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		s.multi.authLog.log(s.log, "edgesocket collector failed to authenticate", attrs...)
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write([]byte(protocol.ReplyAuthFailed + "\n"))
		return "", false
	}
	if err != nil {
		if errors.Is(err, protocol.ErrLineTooLong) {
			return fail("auth line too long", nil)
		}
		return fail("no token line within the auth timeout", err)
	}
	// The engine takes the whole line as the token when the prefix is
	// missing.
	name, ok := s.multi.match(protocol.Trim(bytesTrimPrefix(line, protocol.PrefixAuth)))
	if !ok {
		return fail("wrong token", nil)
	}
	return name, true
}

func bytesTrimPrefix(b []byte, prefix string) []byte {
	if len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix {
		return b[len(prefix):]
	}
	return b
}

// rateLog writes a WARN at most once per every, counting what it
// suppressed in between: a flood of bad connections cannot flood the log.
type rateLog struct {
	every      time.Duration
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (r *rateLog) log(l *slog.Logger, msg string, attrs ...any) {
	r.mu.Lock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	r.mu.Unlock()
	if n > 0 {
		attrs = append(attrs, slog.Int("suppressed_since_last", n))
	}
	l.Warn(msg, attrs...)
}
