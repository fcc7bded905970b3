package standin

import (
	"bufio"
	"bytes"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// conversation is one collector connection after the slot was granted.
type conversation struct {
	s    *Server
	conn net.Conn
	r    *protocol.LineReader
	w    *bufio.Writer
	log  *slog.Logger
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

func (s *Server) serve(conn net.Conn) {
	c := &conversation{
		s:    s,
		conn: conn,
		r:    protocol.NewLineReader(conn, s.cfg.MaxLineBytes),
		w:    bufio.NewWriterSize(conn, 32<<10),
		log:  s.log.With(slog.String("remote", conn.RemoteAddr().String())),
	}
	if !c.authenticate() {
		return
	}
	c.log.Info("edgesocket collector authenticated")
	c.loop()
	_ = c.w.Flush()
	c.log.Info("edgesocket collector disconnected")
}

// authenticate reads the first line within AuthTimeout, as the engine does.
func (c *conversation) authenticate() bool {
	s := c.s
	s.setReadDeadline(c.conn, time.Now().Add(s.cfg.AuthTimeout))
	line, err := c.r.ReadRawLine()
	if err != nil {
		c.log.Warn("edgesocket auth: no token line", slog.Any("error", err))
		c.refuse()
		return false
	}
	if forced := s.Faults().AuthReply; forced != "" {
		c.reply(forced)
		if forced != protocol.ReplyACK {
			s.stats.authFailures.Add(1)
			_ = c.w.Flush()
			return false
		}
		s.stats.sessions.Add(1)
		if c.w.Flush() != nil {
			return false
		}
		s.setReadDeadline(c.conn, time.Time{})
		return true
	}
	if !enginemodel.Authenticates(line, s.cfg.Token) {
		c.log.Warn("edgesocket auth: wrong token")
		c.refuse()
		return false
	}
	s.setReadDeadline(c.conn, time.Time{})
	// Counted before the ACK leaves, so a collector that saw ACK also
	// sees the count.
	s.stats.sessions.Add(1)
	c.reply(protocol.ReplyACK)
	return c.w.Flush() == nil
}

func (c *conversation) refuse() {
	c.s.stats.authFailures.Add(1)
	c.reply(protocol.ReplyAuthFailed)
	_ = c.w.Flush()
}

// loop answers requests until EOF, an error, a cut or Close.
func (c *conversation) loop() {
	for {
		line, err := c.r.ReadRawLine()
		if err != nil {
			if errors.Is(err, protocol.ErrLineTooLong) {
				c.s.stats.badRequests.Add(1)
				c.reply(protocol.ReplyBadRequest)
				c.log.Warn("edgesocket request line too long; closing", slog.Any("error", err))
			}
			return
		}
		reply, cut := c.dispatch(line)
		if cut {
			c.s.stats.cuts.Add(1)
			c.log.Info("edgesocket fault: cutting the connection")
			return
		}
		c.reply(reply)
		// Replies to pipelined requests leave in one write; flush once no
		// further whole request is already buffered.
		if !c.r.LineBuffered() {
			if err := c.w.Flush(); err != nil {
				return
			}
		}
	}
}

func (c *conversation) reply(line string) {
	_ = c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.w.WriteString(line)
	_ = c.w.WriteByte('\n')
}

// dispatch answers one request. cut asks to close without a reply.
func (c *conversation) dispatch(line []byte) (reply string, cut bool) {
	s := c.s
	req, err := protocol.ParseRequest(line)
	if err != nil {
		if req.Kind == protocol.KindBatch || bytes.HasPrefix(line, []byte(protocol.PrefixBatch)) {
			s.stats.batches.Add(1)
		}
		s.stats.badRequests.Add(1)
		return enginemodel.RequestReply(err), false
	}
	switch req.Kind {
	case protocol.KindBatch:
		return c.batch(req.BatchID, req.Payload)
	case protocol.KindCommit:
		if h := s.cfg.CommitHandler; h != nil {
			if r := h(req.BatchID); r != "" {
				return r, false
			}
		}
		return protocol.ReplyPending, false
	default:
		// A second __AUTH__ is "not dispatched" by the engine.
		s.stats.badRequests.Add(1)
		return protocol.ReplyBadRequest, false
	}
}

// batch applies faults, decodes and hands the record over.
func (c *conversation) batch(id int64, payload []byte) (reply string, cut bool) {
	s := c.s
	s.stats.batches.Add(1)
	n := s.seq.Add(1)
	f := s.Faults()
	if f.ReplyDelay > 0 {
		t := time.NewTimer(f.ReplyDelay)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
		}
	}
	if f.BatchReply != "" {
		return f.BatchReply, false
	}
	if every(n, f.QueueFullEvery) {
		d := f.QueueFullDelay
		if d <= 0 {
			d = protocol.DefaultQueueFullDelayMillis * time.Millisecond
		}
		return protocol.QueueFull(d), false
	}
	record := payload
	if s.cfg.Decoder != nil {
		var err error
		if record, err = s.cfg.Decoder.Decode(payload); err != nil {
			c.log.Warn("edgesocket batch does not decode", slog.Int64("batch_id", id), slog.Any("error", err))
			reply := enginemodel.DecodeReply(err)
			if reply == protocol.ReplyDecryptFailed {
				s.stats.decryptFailures.Add(1)
			} else {
				s.stats.decodeFailures.Add(1)
			}
			return reply, false
		}
	}
	if every(n, f.RetryEvery) {
		return protocol.ReplyRetry, false
	}
	reply = protocol.ReplyReceived
	if h := s.cfg.Handler; h != nil {
		if r := h(id, record); r != "" {
			reply = r
		}
	}
	s.stats.records.Add(1)
	if every(n, f.CutAfter) {
		return "", true
	}
	return reply, false
}

func every(n int64, k int) bool { return k > 0 && n%int64(k) == 0 }
