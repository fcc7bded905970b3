package edgesocket

import (
	"github.com/edge-agent/edge-agent/connector/input"
)

// Stats counts what the relay took: Events and BytesRead are the batches
// handed to the scheduler and their stored bytes; Errors the batches
// answered QUEUE_FULL; AuthFailures and Evicted the listener's refusals
// before authentication. Safe for concurrent use.
func (in *Input) Stats() input.Stats {
	st := input.Stats{
		LinesRead: in.stats.events.Load(),
		Events:    in.stats.events.Load(),
		BytesRead: in.stats.bytes.Load(),
		Errors:    in.stats.queueFull.Load(),
	}
	if srv := in.srv.Load(); srv != nil {
		rs := srv.Stats()
		for _, rc := range rs.AuthFailures.ByReason() {
			st.AuthFailures = append(st.AuthFailures, input.Count{Reason: rc.Reason, N: int64(rc.N)})
		}
		st.Evicted = int64(rs.Evicted)
	}
	return st
}

// Peers lists the connected collectors. Safe for concurrent use.
func (in *Input) Peers() []input.Peer {
	srv := in.srv.Load()
	if srv == nil {
		return nil
	}
	cs := srv.Collectors()
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
	srv := in.srv.Load()
	if srv == nil {
		return nil
	}
	ts := srv.Totals()
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
