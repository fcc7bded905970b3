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

// conversation is one collector connection after the slot was granted:
// the engine model's session answers each line, the faults wrap it.
type conversation struct {
	s    *Server
	conn net.Conn
	ss   *enginemodel.Session
	r    *protocol.LineReader
	w    *bufio.Writer
	log  *slog.Logger
}

// setReadDeadline sets conn's read deadline unless Close has begun, in
// which case the deadline stays in the past so the session winds down.
func (s *Server) setReadDeadline(conn net.Conn, t time.Time) { s.set.SetReadDeadline(conn, t) }

func (s *Server) serve(conn net.Conn) {
	c := &conversation{
		s:    s,
		conn: conn,
		ss:   enginemodel.NewSession(s.src, enginemodel.SessionConfig{Token: s.cfg.Token, Decoder: s.cfg.Decoder}),
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

// authenticate reads the first line within AuthTimeout, as the engine
// does, and has the model answer it unless Faults.AuthReply overrides.
func (c *conversation) authenticate() bool {
	s := c.s
	s.setReadDeadline(c.conn, time.Now().Add(s.cfg.AuthTimeout))
	line, err := c.r.ReadRawLine()
	if err != nil {
		c.log.Warn("edgesocket auth: no token line", slog.Any("error", err))
		return c.authReply(c.ss.AuthTimedOut(), false)
	}
	if forced := s.Faults().AuthReply; forced != "" {
		in := forced == protocol.ReplyACK
		if in {
			// Let the collector in whatever it sent: the model's session
			// gets the token it wants.
			_, in = c.ss.HandleLine([]byte(protocol.PrefixAuth + s.cfg.Token))
		}
		return c.authReply(forced, in)
	}
	reply, keep := c.ss.HandleLine(line)
	if !keep {
		c.log.Warn("edgesocket auth: wrong token")
	}
	return c.authReply(reply, keep)
}

// authReply writes the auth line's reply; keep says the collector is in.
func (c *conversation) authReply(reply string, keep bool) bool {
	s := c.s
	if !keep {
		s.stats.authFailures.Add(1)
		c.reply(reply)
		_ = c.w.Flush()
		return false
	}
	s.setReadDeadline(c.conn, time.Time{})
	// Counted before the ACK leaves, so a collector that saw ACK also
	// sees the count.
	s.stats.sessions.Add(1)
	c.reply(reply)
	return c.w.Flush() == nil
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
		reply, keep, cut := c.answer(line)
		if cut {
			c.s.stats.cuts.Add(1)
			c.log.Info("edgesocket fault: cutting the connection")
			return
		}
		if reply != "" {
			c.reply(reply)
		}
		if !keep {
			return
		}
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

// answer replies to one request: a fault's answer for a batch it
// claims, else the model's. keep false closes after the reply; cut
// closes without it.
func (c *conversation) answer(line []byte) (reply string, keep, cut bool) {
	s := c.s
	if !bytes.HasPrefix(line, []byte(protocol.PrefixBatch)) {
		reply, keep = c.ss.HandleLine(line)
		s.stats.count(reply)
		return reply, keep, false
	}
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
	switch {
	case f.BatchReply != "":
		return f.BatchReply, true, false
	case every(n, f.QueueFullEvery):
		d := f.QueueFullDelay
		if d <= 0 {
			d = protocol.DefaultQueueFullDelayMillis * time.Millisecond
		}
		return protocol.QueueFull(d), true, false
	case every(n, f.RetryEvery):
		return protocol.ReplyRetry, true, false
	}
	reply, keep = c.ss.HandleLine(line)
	s.stats.count(reply)
	if reply == protocol.ReplyDecodeFailed || reply == protocol.ReplyDecryptFailed {
		c.log.Warn("edgesocket batch does not decode", slog.String("reply", reply))
	}
	return reply, keep, every(n, f.CutAfter)
}

func every(n int64, k int) bool { return k > 0 && n%int64(k) == 0 }
