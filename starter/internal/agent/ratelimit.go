package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport"
)

// sendCap is output.rate-limit: a token bucket of events and one of bytes,
// either or both, shared by every send of the agent (not one per
// connection). The sender takes a batch's tokens before it sends it; a
// batch waits for them and is never dropped. set changes the cap of a
// running agent and keeps what the buckets hold. Safe for concurrent use.
type sendCap struct {
	mu     sync.Mutex
	cfg    output.RateLimit
	events *rate.Limiter // nil: events are not capped
	bytes  *rate.Limiter // nil: bytes are not capped
}

func newSendCap(c output.RateLimit, now time.Time) *sendCap {
	s := &sendCap{}
	s.set(c, now)
	return s
}

// set puts c in force at now.
func (s *sendCap) set(c output.RateLimit, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = c
	s.events = retune(s.events, c.EventsPerSecond, c.EventBurst(), now)
	s.bytes = retune(s.bytes, float64(c.BytesPerSecond), c.ByteBurst(), now)
}

// retune returns l set to perSecond and burst, a new full bucket when
// there was none, or nil when perSecond caps nothing.
func retune(l *rate.Limiter, perSecond float64, burst int, now time.Time) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	if l == nil {
		return rate.NewLimiter(rate.Limit(perSecond), burst)
	}
	l.SetLimitAt(now, rate.Limit(perSecond))
	l.SetBurstAt(now, burst)
	return l
}

func (s *sendCap) config() output.RateLimit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// limiters are the buckets in force; none for a nil sendCap (a sender
// loop built without one caps nothing).
func (s *sendCap) limiters() (events, bytes *rate.Limiter) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events, s.bytes
}

// jobBound bounds a job of rows rows and bytes payload bytes to what the
// cap lets out at once (its buckets: one second of the cap by default), so
// a job under the cap comes back, and its rows are acked, about that
// often rather than after a full job's worth of paced sends; a row bigger
// than the byte bucket still makes a job of its own.
func (s *sendCap) jobBound(rows, bytes int) (int, int) {
	events, byteBucket := s.limiters()
	if events != nil {
		rows = max(1, min(rows, events.Burst()))
	}
	if byteBucket != nil {
		bytes = max(1, min(bytes, byteBucket.Burst()))
	}
	return rows, bytes
}

// take waits until the cap has the tokens of the first of batches, takes
// them, then takes those of as many of the following batches as the cap
// holds at once, and returns how many batches may go now (all of them
// without a cap). It gives up when ctx is done or stop is closed, gives
// the tokens back and returns 0. waited is how long it waited.
func (s *sendCap) take(ctx context.Context, stop <-chan struct{}, now func() time.Time, batches []transport.Batch) (n int, waited time.Duration) {
	events, bytes := s.limiters()
	if len(batches) == 0 || (events == nil && bytes == nil) {
		return len(batches), 0
	}
	start := now()
	var held []*rate.Reservation
	if events != nil {
		held = append(held, events.ReserveN(start, 1))
	}
	if bytes != nil {
		held = reserveBytes(bytes, start, len(batches[0].Payload), held)
	}
	var delay time.Duration
	for _, r := range held {
		delay = max(delay, r.DelayFrom(start))
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			return 0, giveBack(t, held, now, start)
		case <-stop:
			return 0, giveBack(t, held, now, start)
		}
		waited = now().Sub(start)
	}
	at := now()
	n = 1
	for n < len(batches) && takeNow(events, bytes, at, len(batches[n].Payload)) {
		n++
	}
	return n, waited
}

// reserveBytes reserves size bytes, in parts of at most the burst when it
// is bigger: the limiter refuses more than its burst at once, and an event
// bigger than the burst must still go, once its bytes are paid for.
func reserveBytes(l *rate.Limiter, at time.Time, size int, held []*rate.Reservation) []*rate.Reservation {
	burst := max(1, l.Burst())
	for {
		part := min(size, burst)
		held = append(held, l.ReserveN(at, part))
		size -= part
		if size <= 0 {
			return held
		}
	}
}

// giveBack cancels the reservations of a batch that will not go now and
// says how long it waited.
func giveBack(t *time.Timer, held []*rate.Reservation, now func() time.Time, start time.Time) time.Duration {
	t.Stop()
	at := now()
	for _, r := range slices.Backward(held) {
		r.CancelAt(at)
	}
	return at.Sub(start)
}

// takeNow takes one event and size bytes if both buckets hold them at at.
func takeNow(events, bytes *rate.Limiter, at time.Time, size int) bool {
	if events != nil && events.TokensAt(at) < 1 {
		return false
	}
	if bytes != nil && bytes.TokensAt(at) < float64(size) {
		return false
	}
	if events != nil {
		events.AllowN(at, 1)
	}
	if bytes != nil {
		bytes.AllowN(at, size)
	}
	return true
}
