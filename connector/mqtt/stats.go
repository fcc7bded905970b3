package mqtt

import (
	"sync/atomic"

	"github.com/edge-agent/edge-agent/connector/input"
)

// stats are the input's counters, all in one place for status and
// metrics. Safe for concurrent use.
type stats struct {
	// messages and bytes were received (bytes: payloads); acked the
	// acknowledgements sent after a commit.
	messages, bytes, acked atomic.Int64
	// waits counts messages that found the queue full: the client's reader
	// waited for room.
	waits atomic.Int64
	// invalid and parseErrors mirror the encoder's counts.
	invalid, parseErrors atomic.Int64
	// connects are sessions opened; connected is 1 while one is up.
	connects, connected atomic.Int64
	// subscribed counts connects whose subscription the broker granted.
	subscribed atomic.Int64
	errors     atomic.Int64
}

// Stats maps the counters onto the agent's: LinesRead are messages,
// ConnectionsTotal sessions opened, Restarts the reconnections after the
// first, Connections 1 while connected.
func (in *Input) Stats() input.Stats {
	s := &in.stats
	connects := s.connects.Load()
	return input.Stats{
		LinesRead:        s.messages.Load(),
		BytesRead:        s.bytes.Load(),
		Events:           in.q.Handed(),
		InvalidSequences: s.invalid.Load(),
		ParseErrors:      s.parseErrors.Load(),
		Errors:           s.errors.Load(),
		Connections:      s.connected.Load(),
		ConnectionsTotal: connects,
		Restarts:         max(connects-1, 0),
	}
}
