package output

import (
	"math"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

// RateLimit is output.rate-limit: a cap on what the agent sends, one for
// the agent as a whole (every output it sends through shares it). The
// sender waits for the cap before it sends; the backlog waits in the
// queue, nothing is ever dropped. The zero value caps nothing.
type RateLimit struct {
	// EventsPerSecond caps the events sent per second; 0: no cap.
	EventsPerSecond float64 `yaml:"events-per-second"`
	// BytesPerSecond caps the payload bytes sent per second, counted as
	// they go on the wire (after PACKET's compression and encryption,
	// framing not included); 0: no cap.
	BytesPerSecond int64 `yaml:"bytes-per-second"`
	// Burst is how much may go at once after a quiet spell: in events when
	// EventsPerSecond is set (the byte cap, if set too, then allows the
	// same span of time), else in bytes. 0: one second of the cap.
	Burst int64 `yaml:"burst"`
}

// Bounds of the rate-limit keys: far above any link, low enough that
// every bucket size fits an int.
const (
	maxEventsPerSecond = 1e9
	maxBytesPerSecond  = 1 << 40
	maxBurst           = 1 << 40
)

// On reports whether any cap is set.
func (r RateLimit) On() bool { return r.EventsPerSecond > 0 || r.BytesPerSecond > 0 }

// Validate names keys relative to the rate-limit section.
func (r RateLimit) Validate() error {
	var p check.Problems
	if e := r.EventsPerSecond; math.IsNaN(e) || e < 0 || e > maxEventsPerSecond {
		p.Add("events-per-second", "must be >= 0 (0: no cap) and <= %g, got %g", float64(maxEventsPerSecond), e)
	}
	if b := r.BytesPerSecond; b < 0 || b > maxBytesPerSecond {
		p.Add("bytes-per-second", "must be >= 0 (0: no cap) and <= %d, got %d", int64(maxBytesPerSecond), b)
	}
	if r.Burst < 0 || r.Burst > maxBurst {
		p.Add("burst", "must be >= 0 (0: one second of the cap) and <= %d, got %d", int64(maxBurst), r.Burst)
	}
	return p.Err()
}

// EventBurst is the events the event bucket holds (at least one); 0 when
// events are not capped.
func (r RateLimit) EventBurst() int {
	if r.EventsPerSecond <= 0 {
		return 0
	}
	if r.Burst > 0 {
		return int(r.Burst)
	}
	return max(1, int(math.Ceil(r.EventsPerSecond)))
}

// ByteBurst is the bytes the byte bucket holds (at least one); 0 when
// bytes are not capped. An event bigger than it still goes: it waits
// until the cap has paid for all its bytes.
func (r RateLimit) ByteBurst() int {
	switch {
	case r.BytesPerSecond <= 0:
		return 0
	case r.EventsPerSecond > 0:
		// The span of time the event bucket covers.
		span := float64(r.EventBurst()) / r.EventsPerSecond
		return int(min(maxBurst, max(1, math.Ceil(span*float64(r.BytesPerSecond)))))
	case r.Burst > 0:
		return int(r.Burst)
	default:
		return int(r.BytesPerSecond)
	}
}

// TimeToSend is how long events holding bytes take to go out at the cap,
// burst aside; 0 without a cap.
func (r RateLimit) TimeToSend(events, bytes int64) time.Duration {
	var s float64
	if r.EventsPerSecond > 0 {
		s = float64(events) / r.EventsPerSecond
	}
	if r.BytesPerSecond > 0 {
		s = max(s, float64(bytes)/float64(r.BytesPerSecond))
	}
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}
