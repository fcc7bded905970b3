package agent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/protocol"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// modelEngine is the engine model served on loopback, its time driven by
// the test: nothing drains, checkpoints or fails over unless asked.
type modelEngine struct {
	job *enginemodel.Job
	srv *enginemodel.Server

	mu      sync.Mutex
	replies map[string]int // replies by request kind and word, e.g. "commit RESEND"
}

// step does one of the engine's random steps for k in [3, 9): drains
// (3, 4), checkpoints (5, 6), fails over (7) or restarts afresh (8),
// noting the last two in failures; it returns the step's name.
func (m *modelEngine) step(t *testing.T, rng *rand.Rand, k, step int, failures *[]string) string {
	t.Helper()
	switch {
	case k < 5:
		m.job.Drain(rng.IntN(400))
		return "drain"
	case k < 7:
		m.job.Checkpoint()
		return "checkpoint"
	case k == 7:
		if err := m.job.Failover(); err != nil {
			t.Fatal(err)
		}
		*failures = append(*failures, fmt.Sprintf("%d:failover", step))
		return "failover"
	default:
		m.job.RestartFresh()
		*failures = append(*failures, fmt.Sprintf("%d:fresh", step))
		return "fresh restart"
	}
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
	m := &modelEngine{job: job, replies: map[string]int{}}
	observe := func(kind protocol.Kind, _ int64, reply string) {
		word, _, _ := strings.Cut(reply, ":")
		m.mu.Lock()
		what := map[protocol.Kind]string{protocol.KindBatch: "batch", protocol.KindCommit: "commit"}[kind]
		m.replies[what+" "+word]++
		m.mu.Unlock()
	}
	srv, err := enginemodel.NewServer(job.Source(), enginemodel.ServerConfig{
		Session: enginemodel.SessionConfig{Token: testToken, Observe: observe}, AcceptTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	m.srv = srv
	return m
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
	stopped := false
	defer func() {
		if !stopped {
			_ = h.stop()
		}
	}()

	produced, appended := 0, uint64(0)
	var failures []string
	var figs resendFigures
	check := func(step string) {
		t.Helper()
		// Every row produced is in the WAL before the check looks.
		transporttest.Eventually(t, 20*time.Second, "rows appended", func() bool { return h.rt.Snapshot().RowsAppended >= appended })
		held := walPayloads(t, h) // first: a row acked after this was committed before
		done := m.committed()
		for i := range produced {
			p := lineEvent("a.log", i).Payload
			if !held[string(p)] && done[string(p)] == 0 {
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
		case k < 9:
			check(m.step(t, rng, k, step, &failures))
		default:
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			figs.add(t, h)
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
	transporttest.Eventually(t, 20*time.Second, "the WAL empty once all is committed", func() bool {
		q := h.rt.Snapshot().Queue
		return q.Pending+q.Sending+q.Received == 0
	})
	stopped = true
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	figs.add(t, h)
	dups := 0
	for _, n := range m.committed() {
		dups += n - 1
	}
	m.mu.Lock()
	t.Logf("%d rows, %d duplicates, failures %v, job %+v, replies %v, agents %+v", produced, dups, failures, m.job.Stats(), m.replies, figs)
	lost := m.replies["commit RETRY"] + m.replies["commit RESEND"]
	m.mu.Unlock()
	// A row is committed twice only when its batch was RECEIVED twice.
	// The agent sends a batch again only (1) when the engine answered a
	// commit about it RETRY or RESEND (a settle), or (2) when it never
	// took the RECEIVED: the outcomes no balanced barrier confirmed when
	// a session ended, those keepOrder handed back, those of a Send an
	// agent stop cut short. A row it took as RECEIVED is never sent
	// again otherwise.
	if figs.resent > uint64(lost) {
		t.Fatalf("the agents sent %d batches again after a settle, but the engine answered only %d commits RETRY or RESEND", figs.resent, lost)
	}
	if bound := figs.received - figs.taken; uint64(dups) > bound {
		t.Fatalf("%d duplicates, but only %d RECEIVED replies were not rows the agents took as received (%d resent after RETRY or RESEND)", dups, bound, figs.resent)
	}
	if len(failures) == 0 && dups != 0 {
		t.Fatalf("%d duplicates without any failover, restart or kill", dups)
	}
}

// resendFigures sums, over the agents a test ran one after another, the
// RECEIVED replies their client read, the rows they took as received,
// and the batches their settles sent again.
type resendFigures struct {
	received, taken, resent uint64
}

// add takes a stopped agent's figures.
func (f *resendFigures) add(t *testing.T, h *harness) {
	t.Helper()
	e := h.rt.ext.Load()
	if e == nil || e.link == nil {
		t.Fatal("the agent's output keeps no client statistics")
	}
	st := e.link()
	f.received += st.Received
	f.resent += st.CommitLost
	f.taken += h.rt.ctr.received.Load()
}

// testSeed reads EDGE_AGENT_TEST_SEED, 0 when unset.
func testSeed() uint64 {
	s, _ := strconv.ParseUint(os.Getenv("EDGE_AGENT_TEST_SEED"), 10, 64)
	return s
}

// TestCheckpointSettlesBeforeNewIDs: a job started afresh after a crash
// lost the rows it held in memory. It answers RETRY for their ids only
// until a new id arrives (then it takes that id's predecessor as its
// floor and ACKs them all), so the agent asks about them and sends them
// again, lowest first, before any new row goes out; all are committed.
func TestCheckpointSettlesBeforeNewIDs(t *testing.T) {
	var mu sync.Mutex
	var after []string         // batches and commits the fresh job read, in order
	before := map[int64]bool{} // batch ids the first job read
	fresh := false
	job, err := enginemodel.NewJob(enginemodel.JobConfig{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := enginemodel.NewServer(job.Source(), enginemodel.ServerConfig{Session: enginemodel.SessionConfig{
		Token: testToken,
		Observe: func(kind protocol.Kind, id int64, reply string) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !fresh && kind == protocol.KindBatch:
				before[id] = true
			case fresh && kind != protocol.KindAuth:
				after = append(after, fmt.Sprintf("%v:%d:%s", kind, id, reply))
			}
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := checkpointConfig(t, srv.Addr(), DeliveryCheckpoint)
	in := &fakeInput{}
	h := startRuntime(t, ingressOptions(t, cfg, t.TempDir(), in))
	defer func() { _ = h.stop() }()

	in.push(lineEvents("a.log", 0, 100)...)
	transporttest.Eventually(t, 20*time.Second, "100 rows held as received", func() bool { return h.rt.Snapshot().Queue.Received == 100 })
	mu.Lock()
	fresh = true
	mu.Unlock()
	job.RestartFresh() // the 100 rows were only in the job's memory
	// The agent's first contact with the fresh job is then its idle poll,
	// on a new session: a poll must not stand in for the settle.
	transporttest.Eventually(t, 20*time.Second, "the agent back at the fresh job", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(after) > 0
	})
	in.push(lineEvents("a.log", 100, 150)...)
	transporttest.Eventually(t, 20*time.Second, "150 rows committed", func() bool {
		job.Drain(1 << 20)
		job.Checkpoint()
		return len(job.Committed()) >= 150
	})
	transporttest.Eventually(t, 20*time.Second, "the WAL empty", func() bool {
		q := h.rt.Snapshot().Queue
		return q.Pending+q.Sending+q.Received == 0
	})
	got := map[string]int{}
	for _, c := range job.Committed() {
		got[string(c.Payload)]++
	}
	for i := range 150 {
		if got[string(lineEvent("a.log", i).Payload)] != 1 {
			t.Fatalf("row %d committed %d times, want once", i, got[string(lineEvent("a.log", i).Payload)])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The fresh job's first batch is the lowest lost id, and every lost
	// id comes before the first new one.
	var lowest, highest int64
	for id := range before {
		if lowest == 0 || id < lowest {
			lowest = id
		}
		highest = max(highest, id)
	}
	if len(before) != 100 {
		t.Fatalf("the first job read %d distinct batches, want 100", len(before))
	}
	resent := map[int64]bool{}
	first := true
	for i, e := range after {
		parts := strings.SplitN(e, ":", 3)
		id, _ := strconv.ParseInt(parts[1], 10, 64)
		if parts[0] != fmt.Sprint(protocol.KindBatch) {
			continue
		}
		if first && id != lowest {
			t.Fatalf("first batch after the restart is %d, want %d (the lowest lost id): %v", id, lowest, after[:i+1])
		}
		first = false
		if id > highest && len(resent) < len(before) {
			t.Fatalf("new batch %d went out (event %d) before every lost id was sent again (%d of %d)", id, i, len(resent), len(before))
		}
		if before[id] {
			resent[id] = true
		}
	}
}

// TestCheckpointGapsGetStandIns: rows whose batch ids come after ids the
// job already received, and that are given up before being sent (here
// queue.max-age-ms while the engine is away), would leave a gap the job's
// watermark never passes. Their ids go out as stand-in records instead,
// so every later row is committed and leaves the WAL.
func TestCheckpointGapsGetStandIns(t *testing.T) {
	job, err := enginemodel.NewJob(enginemodel.JobConfig{})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(addr string) *enginemodel.Server {
		t.Helper()
		var srv *enginemodel.Server
		transporttest.Eventually(t, 10*time.Second, "the engine listening on "+addr, func() bool {
			var err error
			if srv, err = enginemodel.NewServer(job.Source(), enginemodel.ServerConfig{
				Addr: addr, Session: enginemodel.SessionConfig{Token: testToken},
			}); err != nil {
				t.Fatal(err)
			}
			return srv.Start(context.Background()) == nil
		})
		return srv
	}
	srv := serve("127.0.0.1:0")
	addr := srv.Addr()
	cfg := checkpointConfig(t, addr, DeliveryCheckpoint)
	cfg.Queue.MaxAge = 300 * time.Millisecond
	clientOptions(t, cfg).MaxReconnectCycles = 2
	in := &fakeInput{}
	h := startRuntime(t, ingressOptions(t, cfg, t.TempDir(), in))
	defer func() { _ = h.stop() }()

	in.push(lineEvents("a.log", 0, 50)...)
	transporttest.Eventually(t, 20*time.Second, "50 rows received", func() bool { return h.rt.Snapshot().Queue.Received == 50 })
	_ = srv.Close() // the engine goes away; the job keeps its state
	in.push(lineEvents("a.log", 50, 100)...)
	transporttest.Eventually(t, 20*time.Second, "50 rows dropped for age", func() bool { return h.rt.Snapshot().Drops.AgeRows >= 50 })
	srv = serve(addr)
	defer srv.Close()
	in.push(lineEvents("a.log", 100, 150)...)
	transporttest.Eventually(t, 30*time.Second, "the WAL empty: the watermark passed the gap", func() bool {
		job.Drain(1 << 20)
		job.Checkpoint()
		q := h.rt.Snapshot().Queue
		return h.rt.Snapshot().RowsAppended == 150 && q.Pending+q.Sending+q.Received == 0
	})
	got := map[string]int{}
	gaps := map[int64]bool{}
	for _, c := range job.Committed() {
		if g, ok := wal.ParseStandIn(c.Payload); ok {
			if g.Reason != wal.GapDroppedAge || g.BatchID != c.BatchID {
				t.Fatalf("stand-in %+v for batch %d", g, c.BatchID)
			}
			gaps[g.BatchID] = true
			continue
		}
		got[string(c.Payload)]++
	}
	for i := range 150 {
		n := got[string(lineEvent("a.log", i).Payload)]
		if dropped := i >= 50 && i < 100; dropped != (n == 0) {
			t.Fatalf("row %d committed %d times (dropped: %v)", i, n, dropped)
		}
	}
	// Only the ids after the first 50 need stand-ins; the age bound may
	// have dropped a row of the last 50 too, before the engine was back.
	if len(gaps) < 50 {
		t.Fatalf("%d stand-ins committed, want one per dropped row (50)", len(gaps))
	}
}

// TestCheckpointStallDegradesHealth: a job that never completes a
// checkpoint keeps the rows RECEIVED in the WAL, turns health degraded
// with a reason naming checkpoints once they waited
// agent.checkpoint-timeout-ms, and recovers when a checkpoint comes.
func TestCheckpointStallDegradesHealth(t *testing.T) {
	m := startModel(t, 1024)
	cfg := checkpointConfig(t, m.srv.Addr(), DeliveryCheckpoint)
	cfg.Agent.CheckpointTimeout = 200 * time.Millisecond
	in := &fakeInput{}
	h := startRuntime(t, ingressOptions(t, cfg, t.TempDir(), in))
	defer func() { _ = h.stop() }()
	in.push(lineEvents("a.log", 0, 20)...)
	transporttest.Eventually(t, 20*time.Second, "health degraded for want of a checkpoint", func() bool {
		m.job.Drain(1 << 20) // emitted, never committed
		return strings.Contains(h.rt.Snapshot().Health(time.Now(), 0).Reason, "no engine checkpoint")
	})
	st := h.rt.Snapshot()
	if st.Queue.Received != 20 || !st.Health(time.Now(), 0).Healthy {
		t.Fatalf("queue %+v, health %+v: want 20 rows RECEIVED and a healthy, degraded agent", st.Queue, st.Health(time.Now(), 0))
	}
	m.job.Checkpoint()
	transporttest.Eventually(t, 20*time.Second, "the WAL empty and health plain", func() bool {
		st := h.rt.Snapshot()
		return st.Queue.Received == 0 && st.Health(time.Now(), 0).Reason == ""
	})
}

// gappyEngine serves the engine model one collector at a time, and
// answers QUEUE_FULL, recording nothing, to batch gap while hold is set:
// as the engine does when its queue is at the mark whenever that batch
// comes. The batches after it are RECEIVED, so the job has a gap.
type gappyEngine struct {
	t    *testing.T
	job  *enginemodel.Job
	ln   net.Listener
	gap  atomic.Int64 // 0 until the test picks the id
	hold atomic.Bool

	mu      sync.Mutex
	replies []string // "<kind> <id> <reply>" of every request after auth
	skipped bool
}

func startGappy(t *testing.T) *gappyEngine {
	t.Helper()
	job, err := enginemodel.NewJob(enginemodel.JobConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gappyEngine{t: t, job: job, ln: ln}
	go g.serve()
	t.Cleanup(func() { _ = ln.Close() })
	return g
}

func (g *gappyEngine) serve() {
	for {
		conn, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.conversation(conn) // one collector at a time, as the engine
	}
}

func (g *gappyEngine) conversation(conn net.Conn) {
	defer conn.Close()
	s := enginemodel.NewSession(g.job.Source(), enginemodel.SessionConfig{Token: testToken})
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-s.Gone(): // a restore ends the session, as the reader's socket dies with it
			_ = conn.Close()
		case <-ended:
		}
	}()
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		req, _ := protocol.ParseRequest(line)
		var reply string
		keep := true
		g.mu.Lock()
		if gap := g.gap.Load(); req.Kind == protocol.KindBatch && req.BatchID == gap && g.hold.Load() {
			g.skipped = true
			reply = "QUEUE_FULL:20"
		} else {
			reply, keep = s.HandleLine(line)
		}
		if req.Kind == protocol.KindBatch || req.Kind == protocol.KindCommit {
			g.replies = append(g.replies, fmt.Sprintf("%v %d %s", req.Kind, req.BatchID, reply))
		}
		g.mu.Unlock()
		if reply != "" {
			if _, err := conn.Write([]byte(reply + "\n")); err != nil {
				return
			}
		}
		if !keep {
			return
		}
	}
}

// TestCheckpointResendAfterRestoreWithGap: batch G gets QUEUE_FULL while
// the later ones are RECEIVED; a checkpoint completes with G missing (its
// watermark stops below G); G is then RECEIVED; the job fails over to
// that checkpoint. Asked about G, the restored job answers RESEND (a gap
// of the session it restored); the agent sends G again and every row is
// committed.
func TestCheckpointResendAfterRestoreWithGap(t *testing.T) {
	g := startGappy(t)
	cfg := checkpointConfig(t, g.ln.Addr().String(), DeliveryCheckpoint)
	in := &fakeInput{}
	h := startRuntime(t, ingressOptions(t, cfg, t.TempDir(), in))
	defer func() { _ = h.stop() }()

	in.push(lineEvents("a.log", 0, 10)...)
	transporttest.Eventually(t, 20*time.Second, "10 rows received", func() bool { return h.rt.Snapshot().Queue.Received == 10 })
	g.job.Drain(1 << 20)
	g.job.Checkpoint() // covers the first 10
	w := g.job.Source().Figures().LastCommitted
	gap := w + 3 // the third row of the next 10
	g.gap.Store(gap)
	g.hold.Store(true)
	in.push(lineEvents("a.log", 10, 20)...)
	transporttest.Eventually(t, 20*time.Second, "the gap refused and the rows after it received", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.skipped && g.job.Source().Figures().LastReceived >= w+10
	})
	g.job.Drain(1 << 20)
	g.job.Checkpoint() // its watermark stops below the gap
	g.hold.Store(false)
	received := fmt.Sprintf("%v %d RECEIVED", protocol.KindBatch, gap)
	transporttest.Eventually(t, 20*time.Second, "the gap received after the checkpoint", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return slices.Contains(g.replies, received)
	})
	if err := g.job.Failover(); err != nil { // back to the checkpoint with the gap
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		g.job.Drain(1 << 20)
		g.job.Checkpoint()
		q := h.rt.Snapshot().Queue
		if len(g.job.Committed()) >= 20 && q.Pending+q.Sending+q.Received == 0 {
			break
		}
		if time.Now().After(deadline) {
			g.mu.Lock()
			t.Fatalf("after 30 s: %d committed, queue %+v, job %+v; replies %v", len(g.job.Committed()), q, g.job.Source().Figures(), g.replies)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := map[string]int{}
	for _, c := range g.job.Committed() {
		got[string(c.Payload)]++
	}
	for i := range 20 {
		if got[string(lineEvent("a.log", i).Payload)] == 0 {
			t.Fatalf("row %d never committed", i)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	resend := fmt.Sprintf("%v %d RESEND", protocol.KindCommit, gap)
	if !slices.Contains(g.replies, resend) {
		t.Fatalf("the restored job never answered %q; its replies: %v", resend, g.replies)
	}
}

// cuttingEngine serves the engine model one collector at a time; while
// cut is set, the first batch line it reads restarts the job afresh (a
// kill -9 and a new job, no restore) before it is answered: the batch was
// written and never answered. It records every request after the cut.
type cuttingEngine struct {
	job *enginemodel.Job
	ln  net.Listener
	cut atomic.Bool

	mu    sync.Mutex
	cutID int64    // the batch id the restart left unanswered
	after []string // "<kind> <id> <reply>" of every request after it
}

func startCutting(t *testing.T) *cuttingEngine {
	t.Helper()
	job, err := enginemodel.NewJob(enginemodel.JobConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &cuttingEngine{job: job, ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			e.conversation(conn) // one collector at a time, as the engine
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return e
}

func (e *cuttingEngine) conversation(conn net.Conn) {
	defer conn.Close()
	s := enginemodel.NewSession(e.job.Source(), enginemodel.SessionConfig{Token: testToken})
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		req, _ := protocol.ParseRequest(line)
		if req.Kind == protocol.KindBatch && e.cut.CompareAndSwap(true, false) {
			e.job.RestartFresh()
			e.mu.Lock()
			e.cutID = req.BatchID
			e.mu.Unlock()
			return // the connection dies with the old job, unanswered
		}
		reply, keep := s.HandleLine(line)
		if req.Kind == protocol.KindBatch || req.Kind == protocol.KindCommit {
			e.mu.Lock()
			if e.cutID != 0 {
				e.after = append(e.after, fmt.Sprintf("%v %d %s", req.Kind, req.BatchID, reply))
			}
			e.mu.Unlock()
		}
		if reply != "" {
			if _, err := conn.Write([]byte(reply + "\n")); err != nil {
				return
			}
		}
		if !keep {
			return
		}
	}
}

// TestCheckpointUnansweredBatchGoesFirst: the job restarts afresh while
// the first batch of a session awaits its reply. That batch is charged an
// attempt and waits for its retry backoff; the rows after it were never
// written. A fresh job takes the first id it receives as its floor and
// ACKs every lower id without a checkpoint, so none of the later rows
// may reach it first: its first batch is the unanswered one, and no row
// leaves the WAL before a checkpoint covers it.
func TestCheckpointUnansweredBatchGoesFirst(t *testing.T) {
	e := startCutting(t)
	cfg := checkpointConfig(t, e.ln.Addr().String(), DeliveryCheckpoint)
	// The unanswered batch waits at least half of this; the rows after
	// it would not.
	cfg.Retry.Backoff, cfg.Retry.BackoffMax = time.Second, time.Second
	in := &fakeInput{}
	h := startRuntime(t, ingressOptions(t, cfg, t.TempDir(), in))
	defer func() { _ = h.stop() }()

	e.cut.Store(true)
	in.push(lineEvents("a.log", 0, 10)...)
	// Received by the fresh job, then asked about three times: the
	// answer to the first question is in the WAL by the third.
	transporttest.Eventually(t, 20*time.Second, "10 rows received and asked about 3 times", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		received, asked := map[string]bool{}, 0
		for _, a := range e.after {
			f := strings.Fields(a)
			switch {
			case f[0] == fmt.Sprint(protocol.KindBatch) && f[2] == protocol.ReplyReceived:
				received[f[1]], asked = true, 0
			case f[0] == fmt.Sprint(protocol.KindCommit):
				asked++
			}
		}
		return len(received) == 10 && asked >= 3
	})
	e.mu.Lock()
	first := ""
	for _, a := range e.after {
		if f := strings.Fields(a); f[0] == fmt.Sprint(protocol.KindBatch) {
			first = f[1]
			break
		}
	}
	want, trace := strconv.FormatInt(e.cutID, 10), slices.Clone(e.after)
	e.mu.Unlock()
	if first != want {
		t.Errorf("the fresh job's first batch is %s, want %s (the unanswered one, the lowest id): %v", first, want, trace)
	}
	if q := h.rt.Snapshot().Queue; q.Received != 10 {
		t.Fatalf("%d rows held as received, want 10: the rest left the WAL with no checkpoint (%v)", q.Received, trace)
	}
	transporttest.Eventually(t, 20*time.Second, "every row committed and the WAL empty", func() bool {
		e.job.Drain(1 << 20)
		e.job.Checkpoint()
		q := h.rt.Snapshot().Queue
		return len(e.job.Committed()) >= 10 && q.Pending+q.Sending+q.Received == 0
	})
	got := map[string]int{}
	for _, c := range e.job.Committed() {
		got[string(c.Payload)]++
	}
	for i := range 10 {
		if got[string(lineEvent("a.log", i).Payload)] == 0 {
			t.Fatalf("row %d never committed", i)
		}
	}
}
