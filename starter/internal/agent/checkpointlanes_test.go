package agent

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// levelEvent is line i of a.log at level error (the alarm lane) or info.
func levelEvent(i int, alarm bool) input.Event {
	level := "info"
	if alarm {
		level = "error"
	}
	return input.Event{
		Payload: []byte(fmt.Sprintf(`{"_line":%d,"level":%q,"payload":"line-%d"}`, i, level, i)),
		Pos:     input.Position{Key: "a.log", State: []byte(strconv.Itoa(i))},
	}
}

// TestCheckpointWithLanesNewestFirst: CHECKPOINT delivery with lanes and
// newest-first draining, whose rows get their batch ids when claimed,
// through random inputs, drains, checkpoints (some aborted), failovers,
// fresh job restarts and agent restarts against the engine model: after
// every step each row produced is committed or still in the WAL, and at
// the end every row is committed and the WAL is empty (the engine's
// watermark passed every id the agent sent).
func TestCheckpointWithLanesNewestFirst(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := testSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (EDGE_AGENT_TEST_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 3))

	m := startModel(t, 256)
	cfg := checkpointConfig(t, m.srv.Addr(), DeliveryCheckpoint)
	cfg.Queue.QueueSettings.Drain = DrainNewestFirst
	cfg.Queue.QueueSettings.Lanes = []LaneSpec{{Name: "alarm", When: `level == "error"`}, {Name: "default"}}
	home := t.TempDir()
	in := &fakeInput{}
	h := startRuntime(t, ingressOptions(t, cfg, home, in))
	defer func() { _ = h.stop() }()

	var events []input.Event
	appended := uint64(0)
	var failures []string
	check := func(step string) {
		t.Helper()
		transporttest.Eventually(t, 20*time.Second, "rows appended", func() bool { return h.rt.Snapshot().RowsAppended >= appended })
		held := walPayloads(t, h)
		done := m.committed()
		for i, e := range events {
			if !held[string(e.Payload)] && done[string(e.Payload)] == 0 {
				t.Fatalf("after %s (steps %v): row %d is neither committed nor in the WAL", step, failures, i)
			}
		}
	}
	for step := range 30 {
		switch k := rng.IntN(10); {
		case k < 3:
			n := 1 + rng.IntN(200)
			batch := make([]input.Event, n)
			for i := range batch {
				batch[i] = levelEvent(len(events)+i, rng.IntN(4) == 0)
			}
			in.push(batch...)
			events = append(events, batch...)
			appended += uint64(n)
			check("input " + strconv.Itoa(n))
		case k < 9:
			check(m.step(t, rng, k, step, &failures))
		default:
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			in = &fakeInput{}
			h = startRuntime(t, ingressOptions(t, cfg, home, in))
			appended = 0
			failures = append(failures, fmt.Sprintf("%d:agent restart", step))
			check("agent restart")
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
	}
	for round := 0; ; round++ {
		m.job.Drain(1 << 20)
		m.job.Checkpoint()
		done := m.committed()
		missing := 0
		for _, e := range events {
			if done[string(e.Payload)] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if round == 400 {
			t.Fatalf("%d of %d rows never committed (failures %v, agent %+v, job %+v)", missing, len(events), failures, h.rt.Snapshot().Queue, m.job.Stats())
		}
		time.Sleep(25 * time.Millisecond)
	}
	transporttest.Eventually(t, 20*time.Second, "the WAL empty once all is committed", func() bool {
		q := h.rt.Snapshot().Queue
		return q.Pending+q.Sending+q.Received == 0
	})
	t.Logf("%d rows, failures %v, job %+v", len(events), failures, m.job.Stats())
}
