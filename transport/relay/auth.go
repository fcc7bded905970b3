package relay

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Peer is the collector a batch came from.
type Peer struct {
	// Name is the name of the token it presented.
	Name string
	// Remote is its address (host:port).
	Remote string
}

// tokens are the accepted tokens, hashed once so the constant-time check
// does not hash them per connection.
type tokens []namedHash

type namedHash struct {
	name string
	sum  [sha256.Size]byte
}

func newTokens(ts []Token) tokens {
	out := make(tokens, 0, len(ts))
	for _, t := range ts {
		out = append(out, namedHash{name: t.Name, sum: sha256.Sum256([]byte(t.Value))})
	}
	return out
}

// match returns the name of the token presented, comparing it with every
// configured token in constant time (no early exit: the time does not
// tell which one, or how close, matched).
func (ts tokens) match(got []byte) (string, bool) {
	sum := sha256.Sum256(got)
	name, found := "", 0
	for _, t := range ts {
		eq := subtle.ConstantTimeCompare(sum[:], t.sum[:])
		if eq == 1 && found == 0 {
			name = t.name
		}
		found |= eq
	}
	return name, found == 1
}

// authToken is the token a first line presents: what follows the
// __AUTH__: prefix, or the whole line without it (as the engine takes
// it), without surrounding blanks. It returns a subslice of line.
func authToken(line []byte) []byte {
	if len(line) >= len(protocol.PrefixAuth) && string(line[:len(protocol.PrefixAuth)]) == protocol.PrefixAuth {
		line = line[len(protocol.PrefixAuth):]
	}
	return protocol.Trim(line)
}

// readBufferBytes is each session's read buffer: small, because it is
// per connection; a longer line is still read whole, up to MaxLineBytes.
const readBufferBytes = 4 << 10

// authBufferBytes is the read buffer before authentication: a flood of
// connections that never authenticate allocates this little each, and
// the token line still reads whole (up to maxAuthLineBytes).
const authBufferBytes = 256

// maxAuthLineBytes bounds the auth line, whatever MaxLineBytes is: a
// connection not yet authenticated must not make the server buffer much.
const maxAuthLineBytes = 4 << 10

// handle authenticates h's connection, takes a collector slot and serves
// the session pipelined.
func (s *Server) handle(h *handshake, accepted time.Time) {
	conn := h.conn
	defer s.untrack(conn)
	r := protocol.NewLineReaderSize(conn, s.cfg.MaxLineBytes, authBufferBytes)
	name, ok := s.authenticate(h, r, accepted)
	if !ok {
		return
	}
	if r.Buffered() == 0 {
		// The session's buffer; requests sent before the ACK (rare) keep
		// the small one rather than be lost.
		r = protocol.NewLineReaderSize(conn, s.cfg.MaxLineBytes, readBufferBytes)
	}
	setReplyBuffer(conn)
	select {
	case s.sessions <- struct{}{}:
		s.setReadDeadline(conn, time.Time{})
		s.stats.sessions.Add(1)
		_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := conn.Write([]byte(protocol.ReplyACK + "\n")); err != nil {
			<-s.sessions
			return
		}
	default:
		s.stats.rejected.Add(1)
		s.warnFull.Warn(s.log, "edgesocket relay at max connections; collector rejected",
			slog.String("remote", conn.RemoteAddr().String()), slog.String("token_name", name),
			slog.Int("max_connections", s.cfg.MaxConnections))
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write([]byte(protocol.ReplyRejected + "\n"))
		return
	}
	defer func() { <-s.sessions }()
	p := newPipe(s, conn, r, Peer{Name: name, Remote: conn.RemoteAddr().String()})
	p.run()
}

// authenticate runs everything before the session: the TLS handshake and
// the token line within AuthTimeout of accept, the source's penalty wait,
// the token check. It answers AUTH_FAILED to a wrong token (the caller
// answers ACK or REJECTED) and leaves the pre-authentication budget.
// Failures are counted by reason, never with what was presented.
func (s *Server) authenticate(h *handshake, r *protocol.LineReader, accepted time.Time) (string, bool) {
	conn := h.conn
	s.setReadDeadline(conn, accepted.Add(s.cfg.AuthTimeout))
	if _, ok := conn.(*tls.Conn); ok {
		_ = conn.SetWriteDeadline(accepted.Add(s.cfg.AuthTimeout)) // the handshake writes
	}
	line, err := s.firstLine(conn, r)
	if err != nil {
		if !s.pre.leave(h) {
			s.stats.evicted.Add(1)
			return "", false
		}
		why := failReason(err)
		s.stats.authFailed(why)
		if why == reasonTimeout || why == reasonBadLine {
			// As the engine answers; the socket's buffer is empty, the
			// deadline a guard.
			_ = conn.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			_, _ = conn.Write([]byte(protocol.ReplyAuthFailed + "\n"))
		}
		return "", false
	}
	if d := s.pen.delay(h.source); d > 0 {
		s.stats.authDelayed.Add(1)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-h.gone:
		case <-s.done:
		}
		t.Stop()
	}
	if !s.pre.leave(h) {
		// Evicted while its source was being slowed: a token presented,
		// never checked.
		s.stats.authFailed(reasonThrottled)
		return "", false
	}
	if s.isClosing() {
		return "", false
	}
	name, ok := s.tokens.match(authToken(line))
	if ok {
		return name, true
	}
	s.pen.failed(h.source)
	s.stats.authFailed(reasonWrongToken)
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write([]byte(protocol.ReplyAuthFailed + "\n"))
	return "", false
}

// firstLine completes a TLS handshake, then reads the token line.
func (s *Server) firstLine(conn net.Conn, r *protocol.LineReader) ([]byte, error) {
	if tc, ok := conn.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			return nil, &tlsError{err}
		}
	}
	r.SetLimit(maxAuthLineBytes)
	line, err := r.ReadRawLine()
	r.SetLimit(s.cfg.MaxLineBytes)
	return line, err
}

type tlsError struct{ err error }

func (e *tlsError) Error() string { return "tls handshake: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// failReason names why a first line could not be read.
func failReason(err error) authReason {
	var te *tlsError
	switch {
	case isTimeout(err):
		return reasonTimeout
	case errors.Is(err, protocol.ErrLineTooLong):
		return reasonBadLine
	case errors.As(err, &te):
		return reasonTLS
	default:
		return reasonClosed
	}
}
