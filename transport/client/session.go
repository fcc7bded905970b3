package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// session is one authenticated connection.
type session struct {
	conn net.Conn // the stream, TLS when configured
	raw  net.Conn // the socket under it
	r    *protocol.LineReader
	w    *bufio.Writer
	line []byte // scratch for one request line
}

func (s *session) close() { _ = s.conn.Close() }

// errProtocol marks a reply that makes no sense at this point of the
// exchange; the session is dropped like a broken one.
var errProtocol = errors.New("protocol error")

// connect dials, secures and authenticates one session. Errors wrapping
// transport.ErrAuthFailed or transport.ErrRejected end the Send call;
// any other error is worth another attempt.
func (c *Client) connect(ctx context.Context) (*session, error) {
	c.stats.connectAttempts.Add(1)
	dctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	conn, err := c.dial(dctx, "tcp", c.cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.cfg.Endpoint, err)
	}
	raw := conn
	if c.tls != nil {
		tc := tls.Client(conn, c.tls)
		if err := tc.HandshakeContext(dctx); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", c.cfg.Endpoint, err)
		}
		conn = tc
	}
	s := &session{
		conn: conn,
		raw:  raw,
		r:    protocol.NewLineReader(conn, protocol.MaxReplyBytes),
		w:    bufio.NewWriterSize(conn, 64<<10),
	}
	if err := c.authenticate(ctx, s); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// authenticate sends __AUTH__ and reads the verdict.
func (c *Client) authenticate(ctx context.Context, s *session) error {
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = s.conn.SetDeadline(time.Now().Add(c.cfg.ReadTimeout))
	if err := ctx.Err(); err != nil { // the AfterFunc may have run before the line above
		return err
	}
	s.line = protocol.AppendAuth(s.line[:0], c.cfg.Token)
	if _, err := s.w.Write(s.line); err != nil {
		return fmt.Errorf("send auth to %s: %w", c.cfg.Endpoint, err)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("send auth to %s: %w", c.cfg.Endpoint, err)
	}
	line, err := s.r.ReadLine()
	if err != nil {
		return fmt.Errorf("read auth reply from %s: %w", c.cfg.Endpoint, eofError(err))
	}
	_ = s.conn.SetDeadline(time.Time{})
	switch reply := protocol.ParseReply(line); reply.Code {
	case protocol.CodeACK:
		return nil
	case protocol.CodeAuthFailed:
		return fmt.Errorf("authenticate to %s: %w", c.cfg.Endpoint, transport.ErrAuthFailed)
	case protocol.CodeRejected:
		return fmt.Errorf("authenticate to %s: %w", c.cfg.Endpoint, transport.ErrRejected)
	default:
		return fmt.Errorf("authenticate to %s: %w: unexpected auth reply %q", c.cfg.Endpoint, errProtocol, reply.Line)
	}
}

// alive reports whether an idle session is still usable: the peer has not
// closed it and has sent nothing unasked. It costs no round trip.
func (s *session) alive() bool {
	if s.r.Buffered() > 0 {
		return false // unsolicited bytes: out of step
	}
	if ok, known := peekIdle(s.raw); known {
		return ok
	}
	// No socket to peek at (a custom Dial): a short read that must time
	// out. A deadline already in the past would not even try the read.
	_ = s.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	var one [1]byte
	n, err := s.conn.Read(one[:])
	_ = s.conn.SetReadDeadline(time.Time{})
	var ne net.Error
	return n == 0 && errors.As(err, &ne) && ne.Timeout()
}

// eofError names a clean end of stream, which io.EOF alone does not.
func eofError(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("connection closed by the engine (EOF): %w", err)
	}
	return err
}
