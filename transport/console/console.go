package console

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/edge-agent/edge-agent/transport"
)

// maxKeptBuffer bounds the buffer kept between Sends: one Send of huge
// events should not pin their size for the life of the agent.
const maxKeptBuffer = 1 << 20

// Sender writes payloads as lines to a writer. It is safe for concurrent
// use; concurrent Sends write whole Sends one after the other.
type Sender struct {
	closed atomic.Bool

	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	// tail is the rest of a line a failed write cut short, written first
	// by the next Send.
	tail []byte
}

var _ transport.Sender = (*Sender)(nil)

// New returns a Sender writing to w (nil discards).
func New(w io.Writer) *Sender {
	if w == nil {
		w = io.Discard
	}
	return &Sender{w: w}
}

// Send writes each payload as one line of JSON (see AppendJSON), all in
// one write, and reports the batches whose whole line the writer took
// Received. After Close, or once ctx is done, every batch is NotSent.
func (s *Sender) Send(ctx context.Context, batches []transport.Batch) ([]transport.Result, error) {
	results := make([]transport.Result, len(batches))
	for i, b := range batches {
		results[i] = transport.Result{ID: b.ID, Outcome: transport.NotSent}
	}
	if s.closed.Load() {
		return results, transport.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return results, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
	s.buf.Write(s.tail)
	tailLen := len(s.tail)
	// ends[i] is where batch i's line ends in buf; 0 when it has none.
	ends := make([]int, len(batches))
	for i, b := range batches {
		s.buf.Write(append(AppendJSON(s.buf.AvailableBuffer(), b.Payload), '\n'))
		ends[i] = s.buf.Len()
	}

	out := s.buf.Bytes()
	n, err := s.w.Write(out)
	if err == nil && n < len(out) {
		err = io.ErrShortWrite
	}
	for i, end := range ends {
		if end > 0 && end <= n {
			results[i].Outcome = transport.Received
		}
	}
	s.tail = s.tail[:0]
	if err != nil {
		s.tail = append(s.tail, cutLine(out, n, tailLen)...)
	}
	if s.buf.Cap() > maxKeptBuffer {
		s.buf = bytes.Buffer{}
	}
	if err != nil {
		return results, &writeError{err: err}
	}
	return results, nil
}

// writeError is a failed write. It is transport.ErrUnavailable to callers
// (try later, nothing lost) without its text, which names the engine.
type writeError struct{ err error }

func (e *writeError) Error() string   { return "console output unavailable: write: " + e.err.Error() }
func (e *writeError) Unwrap() []error { return []error{transport.ErrUnavailable, e.err} }

// cutLine returns what is left of the line the writer stopped in after
// taking n bytes of out, whose first tailLen bytes finish a line an earlier
// Send cut: nothing when n fell between lines.
func cutLine(out []byte, n, tailLen int) []byte {
	if n < tailLen {
		return out[n:tailLen]
	}
	if n == 0 || n >= len(out) || out[n-1] == '\n' {
		return nil
	}
	end := bytes.IndexByte(out[n:], '\n')
	return out[n : n+end+1]
}

// Close makes later Sends fail with transport.ErrClosed. Idempotent. The
// writer is the caller's and stays open.
func (s *Sender) Close() error {
	s.closed.Store(true)
	return nil
}
