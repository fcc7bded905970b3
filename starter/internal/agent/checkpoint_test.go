package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport/enginemodel"
)

// modelEngine is the engine model served on loopback, its time driven by
// the test: nothing drains, checkpoints or fails over unless asked.
type modelEngine struct {
	job *enginemodel.Job
	srv *enginemodel.Server
}

func startModel(t *testing.T, capacity int) *modelEngine {
	t.Helper()
	job, err := enginemodel.NewJob(enginemodel.JobConfig{
		Source:     enginemodel.SourceConfig{QueueCapacity: capacity, QueueFullRetryAfterMs: 5},
		AbortEvery: 4, // every fourth checkpoint aborts
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := enginemodel.NewServer(job.Source(), enginemodel.ServerConfig{
		Session: enginemodel.SessionConfig{Token: testToken}, AcceptTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &modelEngine{job: job, srv: srv}
}

// committed counts each payload in the job's committed output.
func (m *modelEngine) committed() map[string]int {
	got := map[string]int{}
	for _, c := range m.job.Committed() {
		got[string(c.Payload)]++
	}
	return got
}

func checkpointConfig(t *testing.T, addr string, d Delivery) *testCfg {
	cfg := transportConfig(t, addr)
	cfg.Agent.Delivery = d
	cfg.Agent.CheckpointPoll = 20 * time.Millisecond
	clientOptions(t, cfg).MaxInFlight = 64
	clientOptions(t, cfg).ReadTimeout = 5 * time.Second
	clientOptions(t, cfg).MaxReconnectCycles = 50
	return cfg
}

// walPayloads lists the payloads of every row the running agent's WAL
// still holds (any status).
func walPayloads(t *testing.T, h *harness) map[string]bool {
	t.Helper()
	w := h.rt.wal.Load()
	if w == nil {
		t.Fatal("the agent has no WAL open")
	}
	held := map[string]bool{}
	err := w.View(func(tx *wal.ReadTx) error {
		var after uint64
		for {
			rows, err := tx.List(nil, after, 1000)
			if err != nil || len(rows) == 0 {
				return err
			}
			for _, r := range rows {
				if r.Status != wal.StatusAcked {
					held[string(r.Payload)] = true
				}
				after = r.ID
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// TestCheckpointDeliveryModel drives the agent in CHECKPOINT mode and the
// engine model through a random sequence of inputs, drains, checkpoints
// (some aborted), failovers, fresh restarts and agent restarts. After
// every step, every row produced is in the job's committed output or
// still in the agent's WAL; at the end every row is committed.
func TestCheckpointDeliveryModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := testSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (EDGE_AGENT_TEST_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	m := startModel(t, 256)
	cfg := checkpointConfig(t, m.srv.Addr(), DeliveryCheckpoint)
	home := t.TempDir()
	in := &fakeInput{}
	h := startRuntime(t, ingressOptions(t, cfg, home, in))
	defer func() { _ = h.stop() }()

	produced, appended := 0, uint64(0)
	var failures []string
	check := func(step string) {
		t.Helper()
		// Every row produced is in the WAL before the check looks.
		eventually(t, 20*time.Second, "rows appended", func() bool { return h.rt.Snapshot().RowsAppended >= appended })
		held := walPayloads(t, h) // first: a row acked after this was committed before
		done := m.committed()
		for i := range produced {
			p := string(lineEvent("a.log", i).Payload)
			if !held[p] && done[p] == 0 {
				t.Fatalf("after %s (steps %v): row %d is neither committed nor in the WAL", step, failures, i)
			}
		}
	}
	for step := range 40 {
		switch k := rng.IntN(10); {
		case k < 3:
			n := 1 + rng.IntN(300)
			in.push(lineEvents("a.log", produced, produced+n)...)
			produced += n
			appended += uint64(n)
			check("input " + strconv.Itoa(n))
		case k < 5:
			m.job.Drain(rng.IntN(400))
			check("drain")
		case k < 7:
			m.job.Checkpoint()
			check("checkpoint")
		case k == 7:
			if err := m.job.Failover(); err != nil {
				t.Fatal(err)
			}
			failures = append(failures, fmt.Sprintf("%d:failover", step))
			check("failover")
		case k == 8:
			m.job.RestartFresh()
			failures = append(failures, fmt.Sprintf("%d:fresh", step))
			check("fresh restart")
		default:
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			in = &fakeInput{}
			h = startRuntime(t, ingressOptions(t, cfg, home, in))
			appended = 0 // a new agent counts from 0
			failures = append(failures, fmt.Sprintf("%d:agent restart", step))
			check("agent restart")
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
	}
	// Quiescence: the engine drains and checkpoints until every row is
	// committed, a bounded number of rounds.
	for round := 0; ; round++ {
		m.job.Drain(1 << 20)
		m.job.Checkpoint()
		done := m.committed()
		missing := 0
		for i := range produced {
			if done[string(lineEvent("a.log", i).Payload)] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if round == 400 {
			t.Fatalf("%d of %d rows never committed (failures %v, agent %+v, job %+v)", missing, produced, failures, h.rt.Snapshot().Queue, m.job.Stats())
		}
		time.Sleep(25 * time.Millisecond)
	}
	eventually(t, 20*time.Second, "the WAL empty once all is committed", func() bool {
		q := h.rt.Snapshot().Queue
		return q.Pending+q.Sending+q.Received == 0
	})
	dups := 0
	for _, n := range m.committed() {
		dups += n - 1
	}
	t.Logf("%d rows, %d duplicates, failures %v, job %+v", produced, dups, failures, m.job.Stats())
	if len(failures) == 0 && dups != 0 {
		t.Fatalf("%d duplicates without any failover, restart or kill", dups)
	}
}

// testSeed reads EDGE_AGENT_TEST_SEED, 0 when unset.
func testSeed() uint64 {
	s, _ := strconv.ParseUint(os.Getenv("EDGE_AGENT_TEST_SEED"), 10, 64)
	return s
}
