package enginemodel

import (
	"context"
	"slices"
	"testing"
	"time"
)

func newTestJob(t *testing.T, cfg JobConfig) *Job {
	t.Helper()
	j, err := NewJob(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func committedIDs(j *Job) []int64 {
	var ids []int64
	for _, c := range j.Committed() {
		ids = append(ids, c.BatchID)
	}
	return ids
}

func advance(t *testing.T, j *Job, d time.Duration) {
	t.Helper()
	if err := j.Advance(d); err != nil {
		t.Fatal(err)
	}
}

// Rows are output only once a checkpoint completes.
func TestJobTwoPhaseCommit(t *testing.T) {
	j := newTestJob(t, JobConfig{})
	receive(t, j.Source(), 1, 2, 3)
	if n := j.Drain(10); n != 3 {
		t.Fatalf("drained %d", n)
	}
	if len(j.Committed()) != 0 || len(j.OpenTransaction()) != 3 {
		t.Fatalf("before the checkpoint: committed %v, open %v", j.Committed(), j.OpenTransaction())
	}
	cp, ok := j.Checkpoint()
	if !ok || cp != 1 {
		t.Fatalf("checkpoint %d %v", cp, ok)
	}
	got := j.Committed()
	if len(got) != 3 || got[0].Checkpoint != 1 || string(got[2].Payload) != "r3" {
		t.Fatalf("committed %+v", got)
	}
	if !slices.Equal(committedIDs(j), []int64{1, 2, 3}) || len(j.OpenTransaction()) != 0 {
		t.Fatalf("committed %v", committedIDs(j))
	}
	wantCommits(t, j.Source(), map[int64]string{3: "ACK:3"})
}

func TestJobOutputCallback(t *testing.T) {
	var out []Committed
	j := newTestJob(t, JobConfig{Output: func(rows []Committed) { out = append(out, rows...) }})
	receive(t, j.Source(), 4, 5)
	j.Drain(2)
	j.Checkpoint()
	if len(out) != 2 || out[1].BatchID != 5 || len(j.Committed()) != 0 {
		t.Fatalf("output %+v, kept %+v", out, j.Committed())
	}
}

// An aborted checkpoint leaves the rows in the open transaction; the
// next completed one commits them.
func TestJobAbortedCheckpoint(t *testing.T) {
	j := newTestJob(t, JobConfig{AbortEvery: 2})
	receive(t, j.Source(), 1)
	j.Drain(1)
	j.Checkpoint() // 1 completes
	receive(t, j.Source(), 2)
	j.Drain(1)
	if _, ok := j.Checkpoint(); ok { // 2 aborts
		t.Fatal("checkpoint 2 completed")
	}
	if !slices.Equal(committedIDs(j), []int64{1}) {
		t.Fatalf("committed %v after abort", committedIDs(j))
	}
	wantCommits(t, j.Source(), map[int64]string{2: "PENDING"})
	j.Checkpoint() // 3
	if !slices.Equal(committedIDs(j), []int64{1, 2}) {
		t.Fatalf("committed %v", committedIDs(j))
	}
	if st := j.Stats(); st.Aborted != 1 || st.Checkpoints != 2 || st.Committed != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// The sink takes DrainRate rows per second of model time, fractions
// carried over.
func TestJobDrainRate(t *testing.T) {
	j := newTestJob(t, JobConfig{DrainRate: 1000, Source: SourceConfig{QueueCapacity: 100}})
	for id := int64(1); id <= 50; id++ {
		receive(t, j.Source(), id)
	}
	advance(t, j, 10*time.Millisecond)
	if n := len(j.OpenTransaction()); n != 10 {
		t.Fatalf("10 ms at 1000/s drained %d", n)
	}
	for range 4 {
		advance(t, j, 2500*time.Microsecond) // 2.5 rows each
	}
	if n := len(j.OpenTransaction()); n != 20 {
		t.Fatalf("4×2.5 ms drained %d, want 20 in all", n)
	}
	advance(t, j, time.Second)
	if n := len(j.OpenTransaction()); n != 50 {
		t.Fatalf("drained %d of 50", n)
	}
}

func TestJobDefaultDrainCeiling(t *testing.T) {
	j := newTestJob(t, JobConfig{Source: SourceConfig{QueueCapacity: 60000, QueueRatio: 1}})
	for id := int64(1); id <= 50000; id++ {
		j.Source().Batch(id, nil)
	}
	advance(t, j, time.Second)
	if n := len(j.OpenTransaction()); n != 47000 {
		t.Fatalf("one second drained %d, want 47000", n)
	}
}

// With no checkpoint interval nothing is ever committed.
func TestJobCheckpointingOff(t *testing.T) {
	j := newTestJob(t, JobConfig{})
	receive(t, j.Source(), 1, 2)
	advance(t, j, time.Hour)
	if len(j.Committed()) != 0 || len(j.OpenTransaction()) != 2 {
		t.Fatalf("committed %v", committedIDs(j))
	}
	wantCommits(t, j.Source(), map[int64]string{2: "PENDING"})
}

func TestJobCheckpointInterval(t *testing.T) {
	j := newTestJob(t, JobConfig{CheckpointInterval: 500 * time.Millisecond})
	receive(t, j.Source(), 1, 2)
	advance(t, j, 499*time.Millisecond)
	if len(j.Committed()) != 0 {
		t.Fatal("committed before the interval")
	}
	advance(t, j, time.Millisecond)
	if !slices.Equal(committedIDs(j), []int64{1, 2}) {
		t.Fatalf("committed %v at the interval", committedIDs(j))
	}
	advance(t, j, 2*time.Second) // one step, four checkpoints
	if st := j.Stats(); st.Checkpoints != 5 {
		t.Fatalf("checkpoints %d, want 5", st.Checkpoints)
	}
}

// Failover: the open transaction vanishes, the source comes back from
// the last completed checkpoint with its queued records, and the
// collector's session dies.
func TestJobFailover(t *testing.T) {
	j := newTestJob(t, JobConfig{})
	ss := newTestSession(t, j.Source())
	for _, l := range []string{"__BATCH__:1:a", "__BATCH__:2:b", "__BATCH__:3:c", "__BATCH__:4:d"} {
		ss.HandleLine([]byte(l))
	}
	j.Drain(2)     // 1, 2 emitted; 3, 4 queued
	j.Checkpoint() // commits 1, 2; snapshot queues 3, 4
	receive(t, j.Source(), 5, 6)
	j.Drain(3) // 3, 4, 5 in the open transaction
	if err := j.Failover(); err != nil {
		t.Fatal(err)
	}
	if reply, keep := ss.HandleLine([]byte("__COMMIT__:1")); reply != "" || keep {
		t.Fatalf("old session answered %q", reply)
	}
	st := j.Stats()
	if st.Failovers != 1 || st.LostOpenTx != 3 || st.LostQueued != 1 {
		t.Fatalf("stats %+v", st)
	}
	if len(j.OpenTransaction()) != 0 || !slices.Equal(committedIDs(j), []int64{1, 2}) {
		t.Fatalf("after failover: open %v, committed %v", j.OpenTransaction(), committedIDs(j))
	}
	// 3 and 4 were queued at the snapshot: restored. 5, 6 came after it.
	wantCommits(t, j.Source(), map[int64]string{2: "ACK:2", 3: "PENDING", 4: "PENDING", 5: "RETRY", 6: "RETRY"})
	j.Drain(10)
	j.Checkpoint()
	if !slices.Equal(committedIDs(j), []int64{1, 2, 3, 4}) {
		t.Fatalf("committed %v", committedIDs(j))
	}
}

func TestJobFailoverWithoutCheckpointStartsEmpty(t *testing.T) {
	j := newTestJob(t, JobConfig{})
	receive(t, j.Source(), 1, 2)
	if err := j.Failover(); err != nil {
		t.Fatal(err)
	}
	wantCommits(t, j.Source(), map[int64]string{1: "RETRY"})
}

// Fresh restart: old ids answer RETRY until the first new id N is
// received; then every lower id, the lost ones included, answers ACK:N-1.
func TestJobRestartFresh(t *testing.T) {
	j := newTestJob(t, JobConfig{})
	receive(t, j.Source(), 1, 2, 3, 4, 5)
	j.Drain(3)
	j.Checkpoint() // commits 1..3
	j.Drain(2)     // 4, 5 in the open transaction
	j.RestartFresh()
	if st := j.Stats(); st.FreshRestarts != 1 || st.LostOpenTx != 2 {
		t.Fatalf("stats %+v", st)
	}
	wantCommits(t, j.Source(), map[int64]string{1: "RETRY", 3: "RETRY", 4: "RETRY", 5: "RETRY"})
	receive(t, j.Source(), 6)
	wantCommits(t, j.Source(), map[int64]string{1: "ACK:5", 4: "ACK:5", 5: "ACK:5", 6: "PENDING"})
	if !slices.Equal(committedIDs(j), []int64{1, 2, 3}) {
		t.Fatalf("committed %v: 4 and 5 are lost", committedIDs(j))
	}
}

// Failovers and fresh restarts fall due in Advance.
func TestJobScheduledFaults(t *testing.T) {
	j := newTestJob(t, JobConfig{CheckpointInterval: 100 * time.Millisecond, FailoverEvery: time.Second, RestartFreshEvery: 3 * time.Second})
	advance(t, j, 3*time.Second)
	if st := j.Stats(); st.Failovers != 3 || st.FreshRestarts != 1 || st.Checkpoints != 30 {
		t.Fatalf("stats %+v", st)
	}
}

func TestJobConfigValidate(t *testing.T) {
	for _, c := range []JobConfig{
		{DrainRate: -1}, {CheckpointInterval: -1}, {FailoverEvery: -1}, {RestartFreshEvery: -1}, {AbortEvery: -1},
		{Source: SourceConfig{QueueCapacity: -1}},
	} {
		if _, err := NewJob(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// Run advances by the time between ticks.
func TestJobRun(t *testing.T) {
	j := newTestJob(t, JobConfig{CheckpointInterval: time.Second})
	receive(t, j.Source(), 1)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ticks := make(chan time.Time)
	done := make(chan error, 1)
	go func() { done <- j.Run(context.Background(), t0, ticks) }()
	ticks <- t0.Add(400 * time.Millisecond)
	ticks <- t0.Add(1000 * time.Millisecond)
	close(ticks)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(committedIDs(j), []int64{1}) {
		t.Fatalf("committed %v", committedIDs(j))
	}
}
