package edgesocket

import (
	"log/slog"
	"sync"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// Stats counts what the relay took: Events and BytesRead are the batches
// handed to the scheduler and their stored bytes; Errors the batches
// answered QUEUE_FULL. Safe for concurrent use.
func (in *Input) Stats() input.Stats {
	return input.Stats{
		LinesRead: in.stats.events.Load(),
		Events:    in.stats.events.Load(),
		BytesRead: in.stats.bytes.Load(),
		Errors:    in.stats.queueFull.Load(),
	}
}

// Peers lists the connected collectors. Safe for concurrent use.
func (in *Input) Peers() []input.Peer {
	if in.srv == nil {
		return nil
	}
	cs := in.srv.Collectors()
	out := make([]input.Peer, len(cs))
	for i, c := range cs {
		out[i] = input.Peer{
			Name: c.Name, Remote: c.Remote, Since: c.Since,
			Batches: c.Batches, Bytes: c.Bytes, Received: c.Received, Refused: c.Refused,
			Rate: c.Rate, Owed: c.Owed, LastError: c.LastError,
		}
	}
	return out
}

// PeerTotals are the counters per token name. Safe for concurrent use.
func (in *Input) PeerTotals() []input.PeerTotals {
	if in.srv == nil {
		return nil
	}
	ts := in.srv.Totals()
	out := make([]input.PeerTotals, len(ts))
	for i, t := range ts {
		out[i] = input.PeerTotals{
			Name: t.Name, Connected: t.Connected, Sessions: t.Sessions,
			Batches: t.Batches, Bytes: t.Bytes, Received: t.Received, Refused: t.Refused,
			LastError: t.LastError, LastErrorAt: t.LastErrorAt,
		}
	}
	return out
}

// rateWarn logs a WARN at most once per rateWarnEvery, with the count of
// the ones it held back: QUEUE_FULL can be answered thousands of times a
// second.
type rateWarn struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

const rateWarnEvery = 10 * time.Second

func (r *rateWarn) warn(l *slog.Logger, msg string, attrs ...any) {
	r.mu.Lock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < rateWarnEvery {
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
