package enginemodel

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// SessionConfig configures the sessions of one source.
type SessionConfig struct {
	// Token the collector must present. Required.
	Token string
	// Decoder decodes batch payloads; nil keeps them as sent (RAW).
	Decoder *codec.Decoder
	// Observe, when set, sees every request the session answered after
	// auth: its kind (protocol.KindUnknown for a line that did not
	// parse), batch id (0 if none) and reply. It runs on the session's
	// goroutine and must not call back into the session.
	Observe func(kind protocol.Kind, id int64, reply string)
}

// Session is one collector connection's protocol state: unauthenticated
// until the first line, then answering requests against the source. It
// is bound to the source's incarnation at creation; after a restore or
// reset of the source its lines get no reply and the connection must
// close, as the old reader's socket died with it. A Session is not safe
// for concurrent use; the source it uses is.
type Session struct {
	src    *Source
	cfg    SessionConfig
	epoch  uint64
	gone   <-chan struct{}
	authed bool
}

// NewSession starts a session of src.
func NewSession(src *Source, cfg SessionConfig) *Session {
	epoch, gone := src.incarnation()
	return &Session{src: src, cfg: cfg, epoch: epoch, gone: gone}
}

// Gone is closed when the source this session belongs to was restored or
// reset: the connection must then close.
func (s *Session) Gone() <-chan struct{} { return s.gone }

// Authenticated reports whether the collector's token was accepted.
func (s *Session) Authenticated() bool { return s.authed }

// AuthTimedOut is the reply owed when no auth line came within the
// accept timeout; the connection then closes.
func (s *Session) AuthTimedOut() string { return protocol.ReplyAuthFailed }

// HandleLine answers one request line (terminator stripped, nothing
// else). keep false means close the connection after writing reply; an
// empty reply means close without one.
//
// The first line authenticates: "__AUTH__:<token>" or the bare token
// gets ACK, anything else AUTH_FAILED. After it, each line gets exactly
// one reply; a second __AUTH__ is BAD_REQUEST.
func (s *Session) HandleLine(line []byte) (reply string, keep bool) {
	if !s.authed {
		select {
		case <-s.gone:
			return "", false
		default:
		}
		if !authenticates(line, s.cfg.Token) {
			return protocol.ReplyAuthFailed, false
		}
		s.authed = true
		return protocol.ReplyACK, true
	}
	select {
	case <-s.gone:
		return "", false
	default:
	}
	req, err := protocol.ParseRequest(line)
	var ok bool
	switch {
	case err != nil:
		reply, ok = requestReply(err), true
		req = protocol.Request{}
	case req.Kind == protocol.KindBatch:
		reply, ok = s.src.batch(s.epoch, req.BatchID, req.Payload, s.cfg.Decoder)
	case req.Kind == protocol.KindCommit:
		reply, ok = s.src.commit(s.epoch, req.BatchID)
	default: // a second __AUTH__
		reply, ok = protocol.ReplyBadRequest, true
	}
	if !ok {
		return "", false
	}
	if s.cfg.Observe != nil {
		s.cfg.Observe(req.Kind, req.BatchID, reply)
	}
	return reply, true
}

// The engine's rules for what a collector sends.

// authenticates reports whether line, the first of a session, presents
// token as the engine takes it: "__AUTH__:<token>", or the whole line
// as the token when the prefix is missing. The comparison is
// constant-time and hides the length of token too.
func authenticates(line []byte, token string) bool {
	got := bytes.TrimPrefix(line, []byte(protocol.PrefixAuth))
	a := sha256.Sum256(got)
	b := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// requestReply is the engine's reply to a line after auth that
// protocol.ParseRequest refused: the error's reply word (INVALID_PARAM
// for a bad batch id, say), else BAD_REQUEST.
func requestReply(err error) string {
	var re *protocol.RequestError
	if errors.As(err, &re) {
		return re.Reply
	}
	return protocol.ReplyBadRequest
}

// decodeReply is the engine's reply to a payload its decoder refused:
// DECRYPT_FAILED when it cannot decrypt, DECODE_FAILED otherwise.
func decodeReply(err error) string {
	if codec.IsDecryptError(err) {
		return protocol.ReplyDecryptFailed
	}
	return protocol.ReplyDecodeFailed
}
