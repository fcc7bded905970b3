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
	out  *sentCounter   // under w: bytes handed to conn
	in   *markingReader // under r: when each chunk was read
	line []byte         // scratch for one request line
	win  window         // batch lines that may await replies
	pace pacer          // the rate the engine's queue drains at

	// settled: Settle ran on this session (checkpoint delivery sends no
	// batch before).
	settled bool
	// primed: a batch was RECEIVED on this session (see Client.limit).
	primed bool
	// noCommit: the receiver answered a barrier BAD_REQUEST; drained
	// windows are the barriers from then on.
	noCommit bool
	// lastWritten, lowestReceived and highestReceived are batch ids of
	// this session.
	lastWritten, lowestReceived, highestReceived int64
}

// noteReceived records a RECEIVED for batch id.
func (s *session) noteReceived(id int64) {
	s.primed = true
	s.highestReceived = max(s.highestReceived, id)
	if s.lowestReceived == 0 || id < s.lowestReceived {
		s.lowestReceived = id
	}
}

// barrierID is the id a commit barrier asks about: any id answers as a
// barrier. The one just above the watermark known (within the ids
// received on the session) also polls the job's checkpoints: the engine
// answers ACK:<w> with its whole watermark as soon as a checkpoint
// covers that id, where asking about the newest would wait until
// everything sent was committed.
func (s *session) barrierID(watermark int64) int64 {
	if s.highestReceived == 0 {
		return s.lastWritten
	}
	return min(max(watermark+1, s.lowestReceived), s.highestReceived)
}

func (s *session) close() { _ = s.conn.Close() }

// handed is the stream offset just past every byte written so far,
// buffered or not: the end of the last request line.
func (s *session) handed() int64 { return s.out.n + int64(s.w.Buffered()) }

// onWire reports whether the request bytes up to end have been handed to
// the connection (and so may have reached the engine).
func (s *session) onWire(end int64) bool { return s.out.n >= end }

// consumed is the offset of the next reply byte a ReadLine would return.
func (s *session) consumed() int64 { return s.in.n - int64(s.r.Buffered()) }

// sentCounter counts the bytes handed to the connection. Only the Send
// goroutine writes, so it needs no lock.
type sentCounter struct {
	conn net.Conn
	n    int64
}

func (w *sentCounter) Write(p []byte) (int, error) {
	n, err := w.conn.Write(p)
	w.n += int64(n)
	return n, err
}

// readMark says that the reply bytes before end were read from the
// connection when sent request bytes had been handed to it.
type readMark struct{ end, sent int64 }

// markingReader remembers, for every chunk read from the connection, how
// many request bytes were on the wire at that moment. The engine cannot
// answer a request before it arrives, so a reply that began in a chunk
// read before its request was handed to the socket answers something
// else: it is unsolicited or surplus, however the buffers later line it
// up with a request.
type markingReader struct {
	conn  net.Conn
	sent  *sentCounter
	n     int64 // bytes read so far
	marks []readMark
	head  int // marks before head are no longer needed
}

func (r *markingReader) Read(p []byte) (int, error) {
	n, err := r.conn.Read(p)
	if n > 0 {
		r.n += int64(n)
		r.marks = append(r.marks, readMark{end: r.n, sent: r.sent.n})
	}
	return n, err
}

// sentWhenRead returns how many request bytes were on the wire when the
// reply byte at offset off was read. Offsets must not go backwards
// between calls: marks before off are dropped.
func (r *markingReader) sentWhenRead(off int64) int64 {
	for r.head < len(r.marks) && r.marks[r.head].end <= off {
		r.head++
	}
	if r.head == len(r.marks) {
		// Not read yet (cannot happen after a successful ReadLine): it
		// will be read with whatever is on the wire now.
		r.marks, r.head = r.marks[:0], 0
		return r.sent.n
	}
	sent := r.marks[r.head].sent
	if r.head >= 64 {
		n := copy(r.marks, r.marks[r.head:])
		r.marks, r.head = r.marks[:n], 0
	}
	return sent
}

// connect dials, secures and authenticates one session. Errors wrapping
// transport.ErrAuthFailed or transport.ErrRejected end the Send call;
// any other error is worth another attempt.
func (c *Client) connect(ctx context.Context) (*session, error) {
	c.stats.connectAttempts.Add(1)
	dctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	raw, err := c.dialEngine(dctx)
	if err != nil {
		return nil, err
	}
	conn, err := c.secure(dctx, raw)
	if err != nil {
		return nil, err
	}
	s := newSession(conn, raw)
	s.win = newWindow(c.cfg.MaxInFlight)
	if err := c.authenticate(ctx, s); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// dialEngine opens the TCP connection to the endpoint.
func (c *Client) dialEngine(ctx context.Context) (net.Conn, error) {
	conn, err := c.dial(ctx, "tcp", c.cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.cfg.Endpoint, err)
	}
	return conn, nil
}

// secure runs the TLS handshake on raw when TLS is configured, and
// returns raw itself otherwise. raw is closed when the handshake fails.
func (c *Client) secure(ctx context.Context, raw net.Conn) (net.Conn, error) {
	if c.tls == nil {
		return raw, nil
	}
	tc := tls.Client(raw, c.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("tls handshake with %s: %w", c.cfg.Endpoint, err)
	}
	return tc, nil
}

// newSession wraps a connected (and secured) stream; raw is the socket
// under conn, the same value without TLS.
func newSession(conn, raw net.Conn) *session {
	s := &session{conn: conn, raw: raw, out: &sentCounter{conn: conn}}
	s.in = &markingReader{conn: conn, sent: s.out}
	s.r = protocol.NewLineReader(s.in, protocol.MaxReplyBytes)
	s.w = bufio.NewWriterSize(s.out, 64<<10)
	return s
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
		if n := s.r.Buffered(); n > 0 {
			// Nothing has been asked yet: a reply read now would be
			// matched to the first batch before it is even written.
			return fmt.Errorf("authenticate to %s: %w: %d unsolicited bytes right after ACK, before any batch was sent",
				c.cfg.Endpoint, transport.ErrProtocol, n)
		}
		return nil
	case protocol.CodeAuthFailed:
		return fmt.Errorf("authenticate to %s: %w", c.cfg.Endpoint, transport.ErrAuthFailed)
	case protocol.CodeRejected:
		return fmt.Errorf("authenticate to %s: %w", c.cfg.Endpoint, transport.ErrRejected)
	default:
		return fmt.Errorf("authenticate to %s: %w: unexpected auth reply %q", c.cfg.Endpoint, transport.ErrProtocol, reply.Line)
	}
}

// idleProbe is how long check waits for bytes on a connection it cannot
// peek at (TLS, or a custom Dial without a socket).
const idleProbe = time.Millisecond

// check reports whether a session with no reply owed is still usable, at
// no round trip: nil when the peer has neither closed it nor sent
// anything; an error wrapping transport.ErrProtocol when bytes arrived
// unasked (a surplus reply, garbage); another error when it is closed.
func (s *session) check() error {
	if n := s.r.Buffered(); n > 0 {
		return fmt.Errorf("%w: %d bytes arrived with no reply owed (a surplus or unsolicited reply)", transport.ErrProtocol, n)
	}
	switch peekIdle(s.raw) {
	case idleQuiet:
		return nil
	case idleData:
		if s.conn == s.raw {
			return fmt.Errorf("%w: bytes arrived with no reply owed (a surplus or unsolicited reply)", transport.ErrProtocol)
		}
		// Under TLS the socket also carries records that are not data
		// (session tickets): read through TLS to tell.
	case idleClosed:
		return errors.New("connection closed by the engine while idle")
	}
	// No socket to peek at (a custom Dial), or TLS records: a short read
	// that must time out. A deadline already in the past would not even
	// try the read.
	_ = s.conn.SetReadDeadline(time.Now().Add(idleProbe))
	var one [1]byte
	n, err := s.conn.Read(one[:])
	_ = s.conn.SetReadDeadline(time.Time{})
	var ne net.Error
	switch {
	case n > 0:
		return fmt.Errorf("%w: bytes arrived with no reply owed (a surplus or unsolicited reply)", transport.ErrProtocol)
	case errors.As(err, &ne) && ne.Timeout():
		return nil
	case err == nil || errors.Is(err, io.EOF):
		return errors.New("connection closed by the engine while idle")
	}
	return fmt.Errorf("idle connection: %w", err)
}

// eofError names a clean end of stream, which io.EOF alone does not.
func eofError(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("connection closed by the engine (EOF): %w", err)
	}
	return err
}

// idleState is what a peek at an idle socket found.
type idleState int

const (
	idleUnknown idleState = iota // no socket to peek at
	idleQuiet                    // open, nothing to read
	idleData                     // bytes waiting that nobody asked for
	idleClosed                   // EOF or a socket error
)
