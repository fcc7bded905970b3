package self

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
)

// Sink is one consumer of own log records: Offer takes the encoded
// record, or drops it and counts the drop when it has no room. Offer
// must never block and never log through the agent's logger. rec is the
// sink's to keep.
type Sink interface {
	Offer(rec []byte)
}

// Hub hands the agent's log records to the sinks attached. The zero
// value is not usable: NewHub. Safe for concurrent use.
type Hub struct {
	mu    sync.Mutex
	sinks atomic.Pointer[[]attached]
	// min is the lowest level any sink takes; a record below it costs one
	// atomic load.
	min atomic.Int64
}

type attached struct {
	level slog.Level
	sink  Sink
}

// noSink is min when no sink is attached: above every level.
const noSink = int64(1 << 40)

// NewHub returns a hub with no sink.
func NewHub() *Hub {
	h := &Hub{}
	h.min.Store(noSink)
	return h
}

// Attach makes sink receive every shipped record at level or above until
// the returned detach func runs (idempotent).
func (h *Hub) Attach(level slog.Level, sink Sink) (detach func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store(append(h.list(), attached{level: level, sink: sink}))
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.store(slices.DeleteFunc(h.list(), func(a attached) bool { return a.sink == sink }))
		})
	}
}

// list is a copy of the sinks; callers hold mu.
func (h *Hub) list() []attached {
	if p := h.sinks.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

func (h *Hub) store(list []attached) {
	m := noSink
	for _, a := range list {
		m = min(m, int64(a.level))
	}
	h.sinks.Store(&list)
	h.min.Store(m)
}

// enabled reports whether some sink takes records of level l.
func (h *Hub) enabled(l slog.Level) bool {
	return h != nil && int64(l) >= h.min.Load()
}

// publish offers rec to every sink that takes its level.
func (h *Hub) publish(l slog.Level, rec []byte) {
	p := h.sinks.Load()
	if p == nil {
		return
	}
	for _, a := range *p {
		if l >= a.level {
			a.sink.Offer(rec)
		}
	}
}
