package enginemodel

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/edge-agent/edge-agent/transport/codec"
)

func newTestSource(t *testing.T, cfg SourceConfig) *Source {
	t.Helper()
	s, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// receive sends one RAW record per id and wants RECEIVED for each.
func receive(t *testing.T, s *Source, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if got := s.Batch(id, []byte("r"+strconv.FormatInt(id, 10))); got != "RECEIVED" {
			t.Fatalf("batch %d: %q, want RECEIVED", id, got)
		}
	}
}

// drainAll emits every queued record and returns their batch ids.
func drainAll(s *Source) []int64 {
	var ids []int64
	for range 1 << 20 { // bounded: tests queue far fewer
		r, ok := s.Poll()
		if !ok {
			break
		}
		ids = append(ids, r.BatchID)
	}
	return ids
}

// wantCommits checks __COMMIT__ replies, id → reply.
func wantCommits(t *testing.T, s *Source, want map[int64]string) {
	t.Helper()
	for id, w := range want {
		if got := s.Commit(id); got != w {
			t.Errorf("commit %d: %q, want %q", id, got, w)
		}
	}
}

// checkpoint snapshots and completes cp, returning the snapshot.
func checkpoint(s *Source, cp int64) State {
	st := s.Snapshot(cp)
	s.CheckpointComplete(cp)
	return st
}

func TestHighWaterMark(t *testing.T) {
	for _, tt := range []struct {
		capacity int
		ratio    float64
		want     int
	}{
		{1024, 0.9, 922},  // 921.6 rounds up
		{25, 0.28, 8},     // 7.000000000000001: the float artefact survives
		{8192, 0.9, 7373}, // 7372.8
		{16, 0.9, 15},     // 14.4
		{10, 1, 10},
		{1, 0.9, 1},
		{100, 0.5, 50},
	} {
		if got := HighWaterMark(tt.capacity, tt.ratio); got != tt.want {
			t.Errorf("HighWaterMark(%d, %v) = %d, want %d", tt.capacity, tt.ratio, got, tt.want)
		}
	}
}

func TestBackpressure(t *testing.T) {
	q := newQueue(0, 0.9)
	for i := range 5 {
		q.offer(Record{BatchID: int64(i + 1)})
	}
	if q.backpressure() {
		t.Error("capacity 0: backpressure, want none")
	}
	q = newQueue(1, 0.9)
	if q.backpressure() {
		t.Error("capacity 1, empty: backpressure")
	}
	q.offer(Record{BatchID: 1})
	if !q.backpressure() {
		t.Error("capacity 1, one record: no backpressure")
	}
	q = newQueue(10, 0.9) // hwm 9
	for i := range 8 {
		q.offer(Record{BatchID: int64(i + 1)})
	}
	if q.backpressure() {
		t.Error("8 of hwm 9: backpressure")
	}
	q.offer(Record{BatchID: 9})
	if !q.backpressure() {
		t.Error("9 of hwm 9: no backpressure")
	}
}

// QUEUE_FULL is decided before decoding and records nothing.
func TestQueueFullBeforeDecodeRecordsNothing(t *testing.T) {
	s := newTestSource(t, SourceConfig{QueueCapacity: 2, QueueRatio: 0.5, QueueFullRetryAfterMs: 200})
	receive(t, s, 1)
	before := s.Figures()
	dec, err := codec.NewDecoder(codec.ModePacket, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Undecodable, but the queue is at its mark: QUEUE_FULL, not DECODE_FAILED.
	if got, ok := s.batch(0, 2, []byte("not a packet"), dec); got != "QUEUE_FULL:200" || !ok {
		t.Fatalf("reply %q, want QUEUE_FULL:200", got)
	}
	if after := s.Figures(); after != before {
		t.Fatalf("QUEUE_FULL changed the state: %+v → %+v", before, after)
	}
	wantCommits(t, s, map[int64]string{2: "RETRY"})
	// Once drained, the same payload is decoded and refused.
	drainAll(s)
	if got, _ := s.batch(0, 2, []byte("not a packet"), dec); got != "DECODE_FAILED" {
		t.Fatalf("reply %q, want DECODE_FAILED", got)
	}
	if f := s.Figures(); f.LastReceived != 1 || f.Queued != 0 {
		t.Fatalf("a decode failure was recorded: %+v", f)
	}
}

func TestDefaultQueueFullValue(t *testing.T) {
	s := newTestSource(t, SourceConfig{QueueCapacity: 1})
	receive(t, s, 1)
	if got := s.Batch(2, []byte("x")); got != "QUEUE_FULL:500" {
		t.Fatalf("reply %q, want QUEUE_FULL:500", got)
	}
}

// An offer to a full queue (a mark above capacity, the engine's race
// window) answers RETRY and records nothing.
func TestFullQueueOfferAnswersRetry(t *testing.T) {
	s := newTestSource(t, SourceConfig{QueueCapacity: 2, QueueRatio: 1})
	s.q.hwm = 3 // reach the offer with the queue full
	receive(t, s, 1, 2)
	if got := s.Batch(3, []byte("x")); got != "RETRY" {
		t.Fatalf("reply %q, want RETRY", got)
	}
	if f := s.Figures(); f.LastReceived != 2 || f.Queued != 2 {
		t.Fatalf("RETRY recorded the batch: %+v", f)
	}
}

func TestSourceConfigValidate(t *testing.T) {
	for _, c := range []SourceConfig{
		{QueueCapacity: -1}, {QueueRatio: 1.5}, {QueueRatio: -0.1}, {QueueFullRetryAfterMs: -5},
	} {
		if _, err := NewSource(c); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
}

// Floor quirk, first id 1: the floor stays 0 until id 2 arrives, then
// id 1 answers ACK:1 with no checkpoint.
func TestFloorQuirkFirstIDOne(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1)
	wantCommits(t, s, map[int64]string{1: "PENDING", 2: "RETRY"})
	receive(t, s, 2)
	wantCommits(t, s, map[int64]string{1: "ACK:1", 2: "PENDING"})
}

// Floor quirk, first id N: every lower id answers ACK:N-1.
func TestFloorQuirkFirstIDN(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 10)
	wantCommits(t, s, map[int64]string{1: "ACK:9", 5: "ACK:9", 9: "ACK:9", 10: "PENDING", 11: "RETRY"})
	receive(t, s, 11, 12) // the floor no longer moves
	wantCommits(t, s, map[int64]string{9: "ACK:9", 11: "PENDING"})
}

// Drained: emitted ids stay PENDING until a checkpoint completes.
func TestDrainedIsPendingUntilCheckpoint(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 5, 6)
	if got := drainAll(s); len(got) != 2 {
		t.Fatalf("drained %v", got)
	}
	if f := s.Figures(); f.Pending != 0 || f.Drained != 2 {
		t.Fatalf("figures %+v, want 2 drained", f)
	}
	wantCommits(t, s, map[int64]string{6: "PENDING"})
	checkpoint(s, 1)
	wantCommits(t, s, map[int64]string{5: "ACK:6", 6: "ACK:6"})
	if f := s.Figures(); f.Pending != 0 || f.Drained != 0 {
		t.Fatalf("committed ids not cleared: %+v", f)
	}
}

// The watermark stops at a gap.
func TestWatermarkStopsAtGap(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3, 5)
	drainAll(s)
	if st := checkpoint(s, 1); st.Watermark != 3 {
		t.Fatalf("watermark %d, want 3", st.Watermark)
	}
	// 4 was never received: in a fresh session it is PENDING (rule 5).
	wantCommits(t, s, map[int64]string{3: "ACK:3", 4: "PENDING", 5: "PENDING"})
	receive(t, s, 4)
	drainAll(s)
	checkpoint(s, 2)
	wantCommits(t, s, map[int64]string{4: "ACK:5", 5: "ACK:5"})
}

// A batch with records still queued stops the watermark.
func TestWatermarkStopsAtPartlyEmittedBatch(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 2, 3) // batch 2 holds two records
	for range 2 {             // emits 1 and the first record of 2
		s.Poll()
	}
	if st := checkpoint(s, 1); st.Watermark != 1 {
		t.Fatalf("watermark %d, want 1", st.Watermark)
	}
	wantCommits(t, s, map[int64]string{2: "PENDING"})
	drainAll(s)
	if st := checkpoint(s, 2); st.Watermark != 3 {
		t.Fatalf("watermark %d, want 3", st.Watermark)
	}
}

// Completion commits the watermark stored at the snapshot, not what
// drained since.
func TestCompleteCommitsSnapshotWatermark(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3)
	s.Poll()
	s.Poll()
	s.Snapshot(7)
	drainAll(s)
	s.CheckpointComplete(7)
	wantCommits(t, s, map[int64]string{2: "ACK:2", 3: "PENDING"})
}

// An aborted checkpoint commits nothing, even if completed later.
func TestCheckpointAbortedDoesNotAdvance(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3)
	drainAll(s)
	s.Snapshot(1)
	s.CheckpointAborted(1)
	wantCommits(t, s, map[int64]string{3: "PENDING"})
	s.CheckpointComplete(1) // the watermark is gone
	wantCommits(t, s, map[int64]string{3: "PENDING"})
	checkpoint(s, 2)
	wantCommits(t, s, map[int64]string{3: "ACK:3"})
}

// Restore: ids 1,2,3,5 received; after a restore, 4 is RESEND.
func TestRestoreResendForGap(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3, 5)
	st := s.Snapshot(1)
	if err := s.Restore(st); err != nil {
		t.Fatal(err)
	}
	wantCommits(t, s, map[int64]string{4: "RESEND", 5: "PENDING", 1: "ACK:1", 6: "RETRY"})
}

// A batch received after the snapshot is RETRY after a restore,
// not RESEND: its id is above the saved lastReceived.
func TestRestoreRetryForBatchReceivedAfterSnapshot(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3)
	drainAll(s)
	st := checkpoint(s, 1)
	receive(t, s, 4, 5) // after the barrier: lost by the failover
	if err := s.Restore(st); err != nil {
		t.Fatal(err)
	}
	wantCommits(t, s, map[int64]string{3: "ACK:3", 4: "RETRY", 5: "RETRY"})
	receive(t, s, 4, 5) // resent
	wantCommits(t, s, map[int64]string{4: "PENDING", 5: "PENDING"})
}

// Commit rule 1 after restore: an id never seen below the restored
// watermark answers ACK:<watermark>.
func TestRestoredWatermarkAcksUnseenID(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	if err := s.Restore(State{LastCommitted: 40, Watermark: 50, LastReceived: 60}); err != nil {
		t.Fatal(err)
	}
	wantCommits(t, s, map[int64]string{30: "ACK:50", 50: "ACK:50", 55: "RESEND", 61: "RETRY"})
}

// Restore: lastCommitted = max(saved committed, snapshot watermark);
// pending and drained entries at or below it are dropped; queued records
// come back in order without being counted again.
func TestRestoreStateAndQueue(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3, 4)
	s.Poll() // 1
	s.Poll() // 2
	st := s.Snapshot(1)
	if st.Watermark != 2 || st.LastCommitted != 1 || len(st.Queued) != 2 || len(st.Drained) != 2 {
		t.Fatalf("snapshot %+v", st)
	}
	if err := s.Restore(st); err != nil {
		t.Fatal(err)
	}
	if f := s.Figures(); f.LastCommitted != 2 || f.LastReceived != 4 || f.Queued != 2 || f.Pending != 2 || f.Drained != 0 {
		t.Fatalf("restored figures %+v", f)
	}
	if got := drainAll(s); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("re-offered %v, want [3 4]", got)
	}
	checkpoint(s, 2)
	wantCommits(t, s, map[int64]string{4: "ACK:4"})
}

func TestRestoreFailsWhenQueueCannotTakeRecords(t *testing.T) {
	s := newTestSource(t, SourceConfig{QueueCapacity: 2})
	st := State{LastReceived: 3, Pending: map[int64]int{1: 1, 2: 1, 3: 1}, Queued: []Record{{BatchID: 1}, {BatchID: 2}, {BatchID: 3}}}
	if err := s.Restore(st); err == nil {
		t.Fatal("restored 3 records into a queue of 2")
	}
}

// Commit rule 3: an empty restored state knows no id.
func TestRestoreEmptyState(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	if err := s.Restore(State{}); err != nil {
		t.Fatal(err)
	}
	wantCommits(t, s, map[int64]string{1: "RETRY", 100: "RETRY"})
}

// The rules in order, each shown where a later one would also match.
func TestCommitRulesInOrder(t *testing.T) {
	t.Run("1 ACK before pending", func(t *testing.T) {
		s := newTestSource(t, SourceConfig{})
		receive(t, s, 1, 2) // 1 pending, floor 1
		wantCommits(t, s, map[int64]string{1: "ACK:1"})
	})
	t.Run("1 ACK carries the watermark, above the id", func(t *testing.T) {
		s := newTestSource(t, SourceConfig{})
		receive(t, s, 1, 2, 3)
		drainAll(s)
		checkpoint(s, 1)
		wantCommits(t, s, map[int64]string{1: "ACK:3"})
	})
	t.Run("2 pending before RESEND", func(t *testing.T) {
		s := newTestSource(t, SourceConfig{})
		receive(t, s, 1, 2, 3, 5)
		if err := s.Restore(s.Snapshot(1)); err != nil {
			t.Fatal(err)
		}
		wantCommits(t, s, map[int64]string{3: "PENDING"}) // <= floor, but known
	})
	t.Run("2 drained is pending", func(t *testing.T) {
		s := newTestSource(t, SourceConfig{})
		receive(t, s, 1, 2, 3)
		drainAll(s)
		wantCommits(t, s, map[int64]string{3: "PENDING"})
	})
	t.Run("3 RETRY for never seen", func(t *testing.T) {
		s := newTestSource(t, SourceConfig{})
		wantCommits(t, s, map[int64]string{1: "RETRY"})
		receive(t, s, 2)
		wantCommits(t, s, map[int64]string{3: "RETRY", 50: "RETRY"})
	})
	t.Run("4 RESEND only after restore", func(t *testing.T) {
		s := newTestSource(t, SourceConfig{})
		receive(t, s, 1, 2, 3, 5)
		wantCommits(t, s, map[int64]string{4: "PENDING"})
		if err := s.Restore(s.Snapshot(1)); err != nil {
			t.Fatal(err)
		}
		wantCommits(t, s, map[int64]string{4: "RESEND"})
	})
	t.Run("5 PENDING for a gap in a fresh session", func(t *testing.T) {
		s := newTestSource(t, SourceConfig{})
		receive(t, s, 1, 2, 3, 5)
		wantCommits(t, s, map[int64]string{4: "PENDING"})
	})
}

// No deduplication; one id may carry many records.
func TestNoDedup(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 1, 1)
	if f := s.Figures(); f.Queued != 3 || f.Pending != 1 {
		t.Fatalf("figures %+v, want 3 queued under 1 id", f)
	}
	if got := drainAll(s); len(got) != 3 {
		t.Fatalf("emitted %v, want id 1 three times", got)
	}
}

// A duplicate of a drained id puts it back to pending and holds the
// watermark back.
func TestDuplicateOfDrainedIDHoldsWatermark(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 10, 11, 12) // floor 9
	drainAll(s)
	receive(t, s, 11)
	if st := checkpoint(s, 1); st.Watermark != 10 {
		t.Fatalf("watermark %d, want 10 (11 is pending again)", st.Watermark)
	}
	wantCommits(t, s, map[int64]string{11: "PENDING", 12: "PENDING"})
	drainAll(s)
	checkpoint(s, 2)
	wantCommits(t, s, map[int64]string{12: "ACK:12"})
}

// A duplicate of a committed id is still received and emitted.
func TestDuplicateBelowWatermarkIsEmitted(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3)
	drainAll(s)
	checkpoint(s, 1)
	receive(t, s, 2)
	if got := drainAll(s); len(got) != 1 || got[0] != 2 {
		t.Fatalf("emitted %v, want [2]", got)
	}
	wantCommits(t, s, map[int64]string{2: "ACK:3"})
}

func TestResetForgetsEverything(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3)
	epoch := s.Epoch()
	s.Reset()
	if s.Epoch() == epoch {
		t.Fatal("reset kept the epoch")
	}
	if f := s.Figures(); f != (Figures{}) {
		t.Fatalf("figures after reset %+v", f)
	}
	wantCommits(t, s, map[int64]string{1: "RETRY"})
}

// A snapshot survives serialization: restoring the decoded copy gives
// the same answers as restoring the original.
func TestStateJSONRoundTrip(t *testing.T) {
	s := newTestSource(t, SourceConfig{})
	receive(t, s, 1, 2, 3, 5, 5)
	s.Poll()
	s.Poll()
	st := s.Snapshot(1)
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Fatalf("round trip\n%+v\nwant\n%+v", back, st)
	}
	if err := s.Restore(back); err != nil {
		t.Fatal(err)
	}
	wantCommits(t, s, map[int64]string{2: "ACK:2", 3: "PENDING", 4: "RESEND", 5: "PENDING", 6: "RETRY"})
	if got := drainAll(s); !slices.Equal(got, []int64{3, 5, 5}) {
		t.Fatalf("restored queue %v", got)
	}
}

// A Sink takes records as they arrive: the queue stays empty whatever
// the capacity, ids are drained at once, and __COMMIT__ still waits for
// a checkpoint.
func TestSinkTakesRecordsAtReceipt(t *testing.T) {
	var got []Record
	s := newTestSource(t, SourceConfig{QueueCapacity: 2, QueueRatio: 0.5, Sink: func(r Record) {
		got = append(got, Record{BatchID: r.BatchID, Payload: slices.Clone(r.Payload)})
	}})
	receive(t, s, 1, 2, 3, 4, 5) // past the high-water mark of 1
	if f := s.Figures(); f.Queued != 0 || f.Backpressure || f.Drained != 5 || f.Pending != 0 {
		t.Fatalf("figures %+v", f)
	}
	if len(got) != 5 || got[0].BatchID != 1 || string(got[4].Payload) != "r5" {
		t.Fatalf("sink got %+v", got)
	}
	for _, c := range []struct {
		id   int64
		want string
	}{{3, "PENDING"}, {6, "RETRY"}} {
		if r := s.Commit(c.id); r != c.want {
			t.Fatalf("commit %d before a checkpoint: %q, want %q", c.id, r, c.want)
		}
	}
	s.Snapshot(1)
	s.CheckpointComplete(1)
	if r := s.Commit(3); r != "ACK:5" {
		t.Fatalf("commit 3 after a checkpoint: %q, want ACK:5", r)
	}
}

// A restore with a Sink hands the snapshot's queued records to it.
func TestSinkTakesRestoredQueue(t *testing.T) {
	var got []int64
	s := newTestSource(t, SourceConfig{Sink: func(r Record) { got = append(got, r.BatchID) }})
	err := s.Restore(State{LastReceived: 3, Pending: map[int64]int{2: 1, 3: 1},
		Queued: []Record{{BatchID: 2, Payload: []byte("a")}, {BatchID: 3, Payload: []byte("b")}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{2, 3}) {
		t.Fatalf("sink got %v", got)
	}
	if f := s.Figures(); f.Queued != 0 || f.Pending != 0 || f.Drained != 2 {
		t.Fatalf("figures %+v", f)
	}
}
