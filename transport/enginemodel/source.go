package enginemodel

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Engine defaults of the EdgeSocket source options.
const (
	DefaultQueueCapacity         = 1024
	DefaultQueueRatio            = 0.9
	DefaultQueueFullRetryAfterMs = 500
)

// SourceConfig holds the source options the model honours. Zero values
// take the engine's defaults.
type SourceConfig struct {
	// QueueCapacity is local_queue_capacity. Default 1024.
	QueueCapacity int
	// QueueRatio is queue_backpressure_watermark_ratio, in (0, 1].
	// Default 0.9.
	QueueRatio float64
	// QueueFullRetryAfterMs is queue_full_retry_after_ms, the value put
	// in QUEUE_FULL replies. Default 500.
	QueueFullRetryAfterMs int
	// Sink, when set, takes each record the moment the source accepts
	// it, in place of a job polling the queue: a downstream that keeps
	// up with any collector. The record is emitted at once (its batch id
	// drained), so the queue stays empty and QUEUE_FULL never comes from
	// backpressure; __COMMIT__ still answers from checkpoints (Snapshot,
	// CheckpointComplete). Sink runs under the source's lock and must not
	// call the source; the payload is valid only during the call.
	Sink func(Record)
}

func (c SourceConfig) withDefaults() SourceConfig {
	if c.QueueCapacity == 0 {
		c.QueueCapacity = DefaultQueueCapacity
	}
	if c.QueueRatio == 0 {
		c.QueueRatio = DefaultQueueRatio
	}
	if c.QueueFullRetryAfterMs == 0 {
		c.QueueFullRetryAfterMs = DefaultQueueFullRetryAfterMs
	}
	return c
}

// Validate applies the engine's option checks (after defaults).
func (c SourceConfig) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.QueueCapacity <= 0 {
		errs = append(errs, fmt.Errorf("queue capacity %d: must be > 0", c.QueueCapacity))
	}
	if !(c.QueueRatio > 0 && c.QueueRatio <= 1) {
		errs = append(errs, fmt.Errorf("queue ratio %v: must be in (0, 1]", c.QueueRatio))
	}
	if c.QueueFullRetryAfterMs <= 0 {
		errs = append(errs, fmt.Errorf("queue full retry-after %d ms: must be > 0", c.QueueFullRetryAfterMs))
	}
	return errors.Join(errs...)
}

// State is what a checkpoint holds of the source: enough to restore it.
// It marshals to JSON.
type State struct {
	LastCommitted int64 `json:"last_committed"`
	LastReceived  int64 `json:"last_received"`
	// Watermark is the contiguous drained watermark computed when the
	// snapshot was taken (what completing it would commit).
	Watermark int64         `json:"watermark"`
	Pending   map[int64]int `json:"pending"`
	Drained   []int64       `json:"drained"`
	Queued    []Record      `json:"queued"`
}

// Source is the reader state of one EdgeSocket source. It is global
// across connections: it survives reconnects, not restarts. It is safe
// for concurrent use (sessions and the job's sink share it).
type Source struct {
	cfg SourceConfig

	mu            sync.Mutex
	q             *queue
	lastCommitted int64
	lastReceived  int64
	pending       map[int64]int // id → records received, not yet emitted
	drained       idSet
	watermarks    map[int64]int64 // checkpoint id → snapshot watermark
	restored      bool
	sessionFloor  int64
	// epoch changes on Restore and Reset: a session bound to an older
	// epoch belongs to a reader that no longer exists. gone is closed
	// when the epoch ends.
	epoch uint64
	gone  chan struct{}
}

// NewSource returns an empty source.
func NewSource(cfg SourceConfig) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("edgesocket source: %w", err)
	}
	s := &Source{cfg: cfg.withDefaults()}
	s.resetLocked()
	return s, nil
}

// Config returns the options in force, defaults applied.
func (s *Source) Config() SourceConfig { return s.cfg }

func (s *Source) resetLocked() {
	s.q = newQueue(s.cfg.QueueCapacity, s.cfg.QueueRatio)
	s.lastCommitted, s.lastReceived = 0, 0
	s.pending = make(map[int64]int)
	s.drained = idSet{}
	s.watermarks = make(map[int64]int64)
	s.restored, s.sessionFloor = false, 0
	s.epoch++
	if s.gone != nil {
		close(s.gone)
	}
	s.gone = make(chan struct{})
}

// Reset empties the source as a job started with no state does.
func (s *Source) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
}

// Epoch identifies the current incarnation of the reader.
func (s *Source) Epoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// incarnation returns the current epoch and the channel closed when it
// ends.
func (s *Source) incarnation() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch, s.gone
}

// Batch takes one RAW record under batch id id and returns the reply.
func (s *Source) Batch(id int64, record []byte) string {
	reply, _ := s.batch(0, id, record, nil)
	return reply
}

// batch is Batch for a session of the given epoch (0: any) with an
// optional decoder. ok is false when the epoch is gone: no reply then.
//
// Order as in the engine: backpressure is checked before decoding and
// records nothing; then decode, offer (a full queue answers RETRY), and
// mark the id received.
func (s *Source) batch(epoch uint64, id int64, payload []byte, dec *codec.Decoder) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != 0 && epoch != s.epoch {
		return "", false
	}
	if s.q.backpressure() {
		return protocol.QueueFullPrefix + strconv.Itoa(s.cfg.QueueFullRetryAfterMs), true
	}
	record := payload
	if dec != nil {
		var err error
		if record, err = dec.Decode(payload); err != nil {
			return decodeReply(err), true
		}
	}
	if s.cfg.Sink != nil {
		s.markReceived(id)
		s.emit(Record{BatchID: id, Payload: record})
		return protocol.ReplyReceived, true
	}
	// The queue keeps the record past the caller's buffer.
	if !s.q.offer(Record{BatchID: id, Payload: slices.Clone(record)}) {
		return protocol.ReplyRetry, true
	}
	s.markReceived(id)
	return protocol.ReplyReceived, true
}

// markReceived records one more record of id. No deduplication: a seen
// id counts again and leaves the drained set.
func (s *Source) markReceived(id int64) {
	s.lastReceived = max(s.lastReceived, id)
	s.pending[id]++
	s.drained.remove(id)
	// The engine's floor quirk: before any watermark exists, the floor
	// follows the received id, so lower ids answer ACK unconfirmed.
	if s.lastCommitted == 0 {
		s.lastCommitted = id - 1
	}
}

// Poll emits the oldest queued record, as the reader's pollNext does;
// false when the queue is empty.
func (s *Source) Poll() (Record, bool) {
	r, ok, _ := s.poll(0)
	return r, ok
}

// poll emits for the job of the given epoch (0: any); gone reports a
// stale epoch.
func (s *Source) poll(epoch uint64) (r Record, ok, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != 0 && epoch != s.epoch {
		return Record{}, false, true
	}
	r, ok = s.q.poll()
	if ok {
		s.markEmitted(r.BatchID)
	}
	return r, ok, false
}

// emit hands r to the Sink and counts it out.
func (s *Source) emit(r Record) {
	s.cfg.Sink(r)
	s.markEmitted(r.BatchID)
}

// markEmitted counts one record of id out; the id is drained when its
// last record left.
func (s *Source) markEmitted(id int64) {
	n, ok := s.pending[id]
	if !ok {
		return
	}
	if n > 1 {
		s.pending[id] = n - 1
		return
	}
	delete(s.pending, id)
	s.drained.add(id)
}

// contiguousWatermark walks up from lastCommitted over drained ids: a
// gap or a partly emitted batch stops it.
func (s *Source) contiguousWatermark() int64 {
	return s.drained.runFrom(s.lastCommitted + 1)
}

// Snapshot takes the source's state for checkpoint cp and remembers the
// watermark that completing cp will commit.
func (s *Source) Snapshot(cp int64) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.contiguousWatermark()
	s.watermarks[cp] = w
	drained := s.drained.ids()
	return State{
		LastCommitted: s.lastCommitted,
		LastReceived:  s.lastReceived,
		Watermark:     w,
		Pending:       maps.Clone(s.pending),
		Drained:       drained,
		Queued:        s.q.snapshot(),
	}
}

// CheckpointComplete raises the committed watermark to cp's and forgets
// the batch ids it covers. An unknown cp changes nothing.
func (s *Source) CheckpointComplete(cp int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.watermarks[cp]
	if !ok {
		return
	}
	for c := range s.watermarks {
		if c <= cp {
			delete(s.watermarks, c)
		}
	}
	s.lastCommitted = max(s.lastCommitted, w)
	s.clearCommitted()
}

// CheckpointAborted discards cp's watermark.
func (s *Source) CheckpointAborted(cp int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watermarks, cp)
}

func (s *Source) clearCommitted() {
	for id := range s.pending {
		if id <= s.lastCommitted {
			delete(s.pending, id)
		}
	}
	s.drained.removeThrough(s.lastCommitted)
}

// Restore replaces the source's state with st, as a reader restored from
// a checkpoint: the snapshot's watermark counts as committed, ids up to
// the saved lastReceived that are unknown answer RESEND, and the queued
// records are offered again (to the Sink, if set). It fails when the
// queue cannot take them.
func (s *Source) Restore(st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
	s.lastCommitted = max(st.LastCommitted, st.Watermark)
	s.lastReceived = st.LastReceived
	maps.Copy(s.pending, st.Pending)
	for _, id := range st.Drained {
		s.drained.add(id)
	}
	s.clearCommitted()
	s.sessionFloor = st.LastReceived
	s.restored = true
	for i, r := range st.Queued {
		if s.cfg.Sink != nil {
			s.emit(r)
			continue
		}
		if !s.q.offer(Record{BatchID: r.BatchID, Payload: slices.Clone(r.Payload)}) {
			return fmt.Errorf("restore edgesocket source: queue full at record %d of %d (batch %d)", i+1, len(st.Queued), r.BatchID)
		}
	}
	return nil
}

// Commit answers __COMMIT__:<id> (id > 0). The first rule that matches
// wins.
func (s *Source) Commit(id int64) string {
	reply, _ := s.commit(0, id)
	return reply
}

func (s *Source) commit(epoch uint64, id int64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != 0 && epoch != s.epoch {
		return "", false
	}
	if id <= s.lastCommitted {
		return protocol.ReplyACK + ":" + strconv.FormatInt(s.lastCommitted, 10), true
	}
	if _, ok := s.pending[id]; ok {
		return protocol.ReplyPending, true
	}
	if s.drained.has(id) {
		return protocol.ReplyPending, true
	}
	if id > s.lastReceived {
		return protocol.ReplyRetry, true
	}
	if s.restored && id <= s.sessionFloor {
		return protocol.ReplyResend, true
	}
	return protocol.ReplyPending, true
}

// Figures is a read-out of the source's state, for tests and stats.
type Figures struct {
	LastCommitted int64
	LastReceived  int64
	Queued        int
	Pending       int // batch ids with records not yet emitted
	Drained       int // batch ids emitted, not yet committed
	Backpressure  bool
}

// Figures returns the source's state now.
func (s *Source) Figures() Figures {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Figures{
		LastCommitted: s.lastCommitted,
		LastReceived:  s.lastReceived,
		Queued:        s.q.len(),
		Pending:       len(s.pending),
		Drained:       s.drained.len(),
		Backpressure:  s.q.backpressure(),
	}
}
