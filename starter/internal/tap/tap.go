package tap

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Stage is where in the pipeline an event is seen.
type Stage uint8

// The stages, in pipeline order.
const (
	// StageInput: as the input read it, before its processors (with the
	// input's redaction applied by the publisher).
	StageInput Stage = iota
	// StageProcessed: after the processors, as written to the queue.
	StageProcessed
	// StageSent: as the engine received it (RECEIVED).
	StageSent
	numStages
)

var stageNames = [numStages]string{"input", "processed", "sent"}

func (s Stage) String() string {
	if s < numStages {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// ParseStage maps input|processed|sent to a Stage.
func ParseStage(s string) (Stage, error) {
	for i, n := range stageNames {
		if n == s {
			return Stage(i), nil
		}
	}
	return 0, fmt.Errorf("stage must be input, processed or sent, got %q", s)
}

// Defaults and limits of a subscription: the one place each is written.
const (
	DefaultRate   = 10
	MaxRate       = 1000
	DefaultBuffer = 256
)

// ErrClosed: the hub takes no subscriber (the agent is stopping).
var ErrClosed = errors.New("the agent is stopping: no tap")

// Filter is what one subscriber wants.
type Filter struct {
	Stage Stage
	// Input keeps the events of that input id only; "" every input.
	Input string
	// Rate is the most events a second (burst: as many); 0 means
	// DefaultRate, and it is capped at MaxRate.
	Rate int
	// Buffer is how many events wait for the reader; 0 means
	// DefaultBuffer.
	Buffer int
}

// Event is one event seen at a stage.
type Event struct {
	Stage   Stage
	Input   string
	Time    time.Time
	Payload []byte
}

// Hub fans published events out to its subscribers. Safe for concurrent
// use.
type Hub struct {
	now    func() time.Time
	mu     sync.Mutex
	closed bool
	subs   atomic.Pointer[[]*Sub]
	// active counts the subscribers per stage: Active's one load.
	active [numStages]atomic.Int32
}

// NewHub returns a hub; now is the clock of the rate limits (nil:
// time.Now).
func NewHub(now func() time.Time) *Hub {
	if now == nil {
		now = time.Now
	}
	return &Hub{now: now}
}

// Active reports whether anybody taps stage s. A nil hub taps nothing.
func (h *Hub) Active(s Stage) bool {
	return h != nil && h.active[s].Load() > 0
}

// Subscribe starts a subscription; Sub.Close ends it.
func (h *Hub) Subscribe(f Filter) (*Sub, error) {
	if f.Stage >= numStages {
		return nil, fmt.Errorf("tap: unknown stage %d", f.Stage)
	}
	if f.Rate <= 0 {
		f.Rate = DefaultRate
	}
	f.Rate = min(f.Rate, MaxRate)
	if f.Buffer <= 0 {
		f.Buffer = DefaultBuffer
	}
	s := &Sub{hub: h, f: f, c: make(chan Event, f.Buffer), tokens: float64(f.Rate), last: h.now()}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	h.store(append(h.list(), s))
	h.active[f.Stage].Add(1)
	return s, nil
}

func (h *Hub) list() []*Sub {
	if p := h.subs.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

func (h *Hub) store(l []*Sub) { h.subs.Store(&l) }

// Publish offers one event of input at stage s to the subscribers that
// want it; payload is called at most once, only when one takes it, and
// its result is shared read-only by them (it must be a copy the caller
// no longer touches). Never blocks.
func (h *Hub) Publish(s Stage, input string, payload func() []byte) {
	if !h.Active(s) {
		return
	}
	p := h.subs.Load()
	if p == nil {
		return
	}
	var ev Event
	for _, sub := range *p {
		if sub.f.Stage != s || (sub.f.Input != "" && sub.f.Input != input) {
			continue
		}
		now := h.now()
		if !sub.take(now) {
			continue
		}
		if ev.Payload == nil {
			ev = Event{Stage: s, Input: input, Time: now, Payload: payload()}
			if ev.Payload == nil {
				return // nothing to show (redaction removed the event)
			}
		}
		sub.send(ev)
	}
}

// Close ends every subscription; idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for _, s := range h.list() {
		s.end()
	}
	h.store(nil)
	for i := range h.active {
		h.active[i].Store(0)
	}
}

// Sub is one subscription.
type Sub struct {
	hub *Hub
	f   Filter
	c   chan Event

	mu     sync.Mutex
	ended  bool
	tokens float64
	last   time.Time

	sampledOut, dropped, delivered atomic.Int64
}

// C delivers the events taken; it is closed when the subscription ends.
func (s *Sub) C() <-chan Event { return s.c }

// Filter is the filter in force (defaults applied).
func (s *Sub) Filter() Filter { return s.f }

// Counts are the events the rate limit left out (sampled out), those
// dropped because the reader was behind, and those handed to it.
func (s *Sub) Counts() (sampledOut, dropped, delivered int64) {
	return s.sampledOut.Load(), s.dropped.Load(), s.delivered.Load()
}

// take reports whether the rate limit lets one more event through.
func (s *Sub) take(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := now.Sub(s.last); el > 0 {
		s.tokens = min(float64(s.f.Rate), s.tokens+el.Seconds()*float64(s.f.Rate))
		s.last = now
	}
	if s.tokens < 1 {
		s.sampledOut.Add(1)
		return false
	}
	s.tokens--
	return true
}

// send hands ev over or drops it; never blocks.
func (s *Sub) send(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	select {
	case s.c <- ev:
		s.delivered.Add(1)
	default:
		s.dropped.Add(1)
	}
}

// end closes the channel once.
func (s *Sub) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		close(s.c)
	}
}

// Close ends the subscription; idempotent.
func (s *Sub) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	s.mu.Lock()
	was := s.ended
	s.mu.Unlock()
	if was {
		return
	}
	s.end()
	h.store(slices.DeleteFunc(h.list(), func(o *Sub) bool { return o == s }))
	h.active[s.f.Stage].Add(-1)
}
