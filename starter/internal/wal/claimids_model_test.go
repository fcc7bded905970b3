package wal

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// TestClaimIDsAgainstEngineModel drives a WAL with lanes and ids given
// at claim (CHECKPOINT with lanes) as a collector does, against the
// engine model: random arrivals in random lanes, claims, sends that the
// engine takes or refuses (QUEUE_FULL), connections that die mid-claim,
// attempts running out (DEAD), drops for size and age, agent restarts,
// checkpoints, failovers to the last checkpoint and fresh job restarts.
// Every new session settles the rows held as received and those PENDING
// again under an id sent before, lowest id first, before a claim. Throughout: the ids sent for the first time are
// gap-free and increasing, and a claim takes the rows sent before first,
// then the lanes highest first, each in append order. At the end, with
// the link healthy: the WAL empties, every row produced was committed or
// counted as dropped or DEAD, and the engine's watermark covers every id
// sent (it never stalls).
func TestClaimIDsAgainstEngineModel(t *testing.T) {
	for i := range 4 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			seed := uint64(time.Now().UnixNano()) + uint64(i)
			t.Logf("seed %d", seed)
			runClaimIDsModel(t, rand.New(rand.NewPCG(seed, 7)))
		})
	}
}

var modelLanes = []string{"alarm", "warn"} // then the default lane

func laneRank(lane string) int {
	if i := slices.Index(modelLanes, lane); i >= 0 {
		return i
	}
	return len(modelLanes)
}

type modelCollector struct {
	t   *testing.T
	w   *WAL
	clk *fakeClock
	job *enginemodel.Job
	src *enginemodel.Source

	settled           bool
	given             map[int64]bool // every id a claim gave so far
	sent              map[int64]bool // every id sent so far
	maxSent, maxGiven int64
	lane              map[string]string // payload -> lane
	// lastNew is, per lane, the row id of the last row sent under a new
	// id: new ids go to a lane's rows in append order.
	lastNew map[string]uint64
	dropped map[string]bool    // the input rows DropUnsent dropped
	hist    map[int64][]string // what happened to each id, for failures
	epoch   int
}

func (c *modelCollector) note(id int64, f string, a ...any) {
	c.hist[id] = append(c.hist[id], fmt.Sprintf("e%d ", c.epoch)+fmt.Sprintf(f, a...))
}

func runClaimIDsModel(t *testing.T, rng *rand.Rand) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	open := func() *WAL {
		w, err := Open(Options{Path: path, Now: clk.Now, Lanes: modelLanes, SendOrderBatchIDs: true, GapFree: true})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return w
	}
	job, err := enginemodel.NewJob(enginemodel.JobConfig{Source: enginemodel.SourceConfig{QueueCapacity: 16}})
	if err != nil {
		t.Fatal(err)
	}
	c := &modelCollector{t: t, w: open(), clk: clk, job: job, src: job.Source(),
		given: map[int64]bool{}, sent: map[int64]bool{}, lane: map[string]string{}, lastNew: map[string]uint64{}, dropped: map[string]bool{}, hist: map[int64][]string{}}
	defer func() { _ = c.w.Close() }()
	const maxAttempts = 3
	produced := 0
	for step := 0; step < 400; step++ {
		clk.Add(int64(rng.IntN(50)))
		switch op := rng.IntN(20); {
		case op < 6: // arrivals
			n := 1 + rng.IntN(8)
			rows := make([]NewRow, n)
			for i := range rows {
				lane := ""
				if k := rng.IntN(len(modelLanes) + 1); k < len(modelLanes) {
					lane = modelLanes[k]
				}
				p := fmt.Sprintf("row-%d", produced)
				produced++
				c.lane[p] = lane
				rows[i] = NewRow{SourceID: "in", Payload: []byte(p), Lane: lane}
			}
			c.update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err })
		case op < 11:
			c.send(1+rng.IntN(12), rng, maxAttempts)
		case op < 13:
			c.job.Drain(rng.IntN(20))
		case op < 15:
			c.job.Drain(1 << 20)
			c.job.Checkpoint()
		case op == 15:
			c.poll()
		case op == 16:
			if rng.IntN(2) == 0 {
				if err := c.job.Failover(); err != nil {
					t.Fatal(err)
				}
			} else {
				c.job.RestartFresh()
			}
			c.epoch++
			c.settled = false
		case op == 17: // agent restart
			checkConsistent(t, c.w)
			if err := c.w.Close(); err != nil {
				t.Fatal(err)
			}
			c.w = open()
			c.update(func(tx *Tx) error { _, err := tx.ResurrectSending(clk.MS()); return err })
			c.settled = false
		case op == 18: // queue full
			var payload int64
			_ = c.w.View(func(tx *ReadTx) error { payload = tx.Counts().PayloadBytes; return nil })
			c.drop(DropLimits{MaxBytes: payload * int64(rng.IntN(4)) / 4})
		case op == 19: // max-age
			c.drop(DropLimits{OlderThanMS: clk.MS() - int64(rng.IntN(2000))})
		}
	}
	checkConsistent(t, c.w)

	// The link heals: everything goes out and is committed.
	for round := 0; ; round++ {
		if round == 200 {
			var counts Counts
			_ = c.w.View(func(tx *ReadTx) error { counts = tx.Counts(); return nil })
			var held []int64
			_ = c.w.View(func(tx *ReadTx) error {
				return tx.ReceivedFunc(func(_ uint64, b int64, _ int64) bool { held = append(held, b); return true })
			})
			var never []int64
			for id := range c.given {
				if !c.sent[id] {
					never = append(never, id)
				}
			}
			slices.Sort(never)
			stuck := c.src.Figures().LastCommitted + 1
			t.Fatalf("WAL not empty after %d healthy rounds: %+v; engine %+v; ids given never sent %v; id %d: %q",
				round, counts, c.src.Figures(), never, stuck, c.hist[stuck])
		}
		clk.Add(60_000) // past any backoff
		c.job.Drain(1 << 20)
		c.send(64, rng, 0)
		c.job.Drain(1 << 20)
		c.job.Checkpoint()
		c.poll()
		var counts Counts
		_ = c.w.View(func(tx *ReadTx) error { counts = tx.Counts(); return nil })
		if counts.Pending+counts.Sending+counts.Received == 0 {
			break
		}
	}
	checkConsistent(t, c.w)

	var dropped int
	_ = c.w.View(func(tx *ReadTx) error {
		for _, d := range tx.DropTotals() {
			dropped += int(d.Rows)
		}
		return nil
	})
	if dropped != len(c.dropped) {
		t.Fatalf("drop totals say %d rows, %d went", dropped, len(c.dropped))
	}
	_, dead := c.live()
	committed := map[string]bool{}
	for _, r := range c.job.Committed() {
		p := string(r.Payload)
		if strings.HasPrefix(p, "row-") {
			committed[p] = true
		}
	}
	for i := range produced {
		p := fmt.Sprintf("row-%d", i)
		if !committed[p] && !c.dropped[p] && !dead[p] {
			t.Errorf("%s (lane %q) neither committed, dropped nor DEAD", p, c.lane[p])
		}
	}
	if c.maxSent > 0 {
		reply := c.src.Commit(c.maxSent)
		w, ok := strings.CutPrefix(reply, protocol.ReplyACK+":")
		if n, err := strconv.ParseInt(w, 10, 64); !ok || err != nil || n < c.maxSent {
			t.Fatalf("__COMMIT__:%d = %s: the watermark stalls below the ids sent", c.maxSent, reply)
		}
	}
	t.Logf("%d rows: %d committed, %d dropped, %d DEAD; ids up to %d; engine %+v",
		produced, len(committed), dropped, len(dead), c.maxSent, c.job.Stats())
}

// live returns the payloads of the input rows in the WAL, DEAD ones
// apart.
func (c *modelCollector) live() (alive, dead map[string]bool) {
	alive, dead = map[string]bool{}, map[string]bool{}
	_ = c.w.View(func(tx *ReadTx) error {
		for id := uint64(1); id < tx.NextRowID(); id++ {
			r, ok, err := tx.row(id)
			if err != nil || !ok || !strings.HasPrefix(string(r.Payload), "row-") {
				continue
			}
			if r.Status == StatusDead {
				dead[string(r.Payload)] = true
			} else if r.Status != StatusAcked {
				alive[string(r.Payload)] = true
			}
		}
		return nil
	})
	return alive, dead
}

// drop runs a DropUnsent and records the rows it dropped.
func (c *modelCollector) drop(lim DropLimits) {
	before, _ := c.live()
	c.update(func(tx *Tx) error { _, _, _, err := tx.DropUnsent(lim); return err })
	after, _ := c.live()
	for p := range before {
		if !after[p] {
			c.dropped[p] = true
		}
	}
}

func (c *modelCollector) update(fn func(tx *Tx) error) {
	c.t.Helper()
	if err := c.w.Update(fn); err != nil {
		c.t.Fatal(err)
	}
}

// ack applies an ACK:<w> reply.
func (c *modelCollector) ack(reply string) bool {
	s, ok := strings.CutPrefix(reply, protocol.ReplyACK+":")
	if !ok {
		return false
	}
	w, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		c.t.Fatalf("reply %q", reply)
	}
	_ = c.w.View(func(tx *ReadTx) error {
		return tx.ReceivedFunc(func(_ uint64, b int64, _ int64) bool {
			if b <= w {
				c.note(b, "acked by %s", reply)
			}
			return true
		})
	})
	c.update(func(tx *Tx) error { _, err := tx.AckReceivedThrough(w, 0, c.clk.MS()); return err })
	return true
}

// settle asks the engine about every unsettled row (UnsettledFunc),
// lowest id first, and sends again those it lost under their id.
func (c *modelCollector) settle() {
	type held struct {
		id    uint64
		batch int64
	}
	var rows []held
	_ = c.w.View(func(tx *ReadTx) error {
		return tx.UnsettledFunc(func(id uint64, b int64) bool { rows = append(rows, held{id, b}); return true })
	})
	slices.SortFunc(rows, func(a, b held) int { return int(a.batch - b.batch) })
	for _, r := range rows {
		reply := c.src.Commit(r.batch)
		if c.ack(reply) || reply == protocol.ReplyPending {
			continue
		}
		var payload []byte
		_ = c.w.View(func(tx *ReadTx) error {
			row, _, err := tx.row(r.id)
			payload = row.Payload
			return err
		})
		// A row PENDING again stays so, and goes out again at a claim.
		// A refusal ends the settle: no higher id may reach a fresh job
		// before this one (its floor would confirm this one unchecked).
		c.sending(r.batch)
		reply = c.src.Batch(r.batch, payload)
		c.note(r.batch, "settle resend row %d: %s", r.id, reply)
		if reply != protocol.ReplyReceived {
			return
		}
	}
	c.settled = true
}

// sending checks that an id sent for the first time follows the highest
// sent before.
func (c *modelCollector) sending(id int64) {
	if c.sent[id] {
		return
	}
	if c.maxSent != 0 && id != c.maxSent+1 {
		c.t.Fatalf("new id %d sent after %d: a gap; id %d: %q", id, c.maxSent, c.maxSent+1, c.hist[c.maxSent+1])
	}
	c.sent[id], c.maxSent = true, id
}

// poll asks about the lowest id held as received.
func (c *modelCollector) poll() {
	if !c.settled {
		return
	}
	var lowest int64
	_ = c.w.View(func(tx *ReadTx) error {
		return tx.ReceivedFunc(func(_ uint64, b int64, _ int64) bool {
			if lowest == 0 || b < lowest {
				lowest = b
			}
			return true
		})
	})
	if lowest > 0 {
		c.ack(c.src.Commit(lowest))
	}
}

// send claims up to n rows and sends them in order; with maxAttempts
// above 0 the connection may die on the way (the rest released) and a
// refusal may be charged.
func (c *modelCollector) send(n int, rng *rand.Rand, maxAttempts int) {
	t := c.t
	if !c.settled {
		if c.settle(); !c.settled {
			return
		}
	}
	var rows []Row
	c.update(func(tx *Tx) error {
		rows = rows[:0]
		_, _, err := tx.ClaimFunc(n, 0, c.clk.MS(), func(r *Row) {
			row := *r
			row.Payload = slices.Clone(r.Payload)
			rows = append(rows, row)
		})
		return err
	})
	// The rows sent before first, then the lanes highest first.
	resent, rank := true, 0
	for _, r := range rows {
		if c.given[r.BatchID] {
			if !resent {
				t.Fatalf("claim %v ids %v: id %d sent before comes after a new one", payloads(rows), rowBatchIDs(rows), r.BatchID)
			}
			continue
		}
		resent = false
		lane := c.lane[string(r.Payload)]
		if _, ok := ParseStandIn(r.Payload); ok {
			t.Fatalf("stand-in %q under the new id %d", r.Payload, r.BatchID)
		}
		if r.BatchID != c.maxGiven+1 && c.maxGiven != 0 {
			t.Fatalf("claim %v ids %v: new id %d after %d", payloads(rows), rowBatchIDs(rows), r.BatchID, c.maxGiven)
		}
		c.maxGiven = r.BatchID
		if laneRank(lane) < rank {
			t.Fatalf("claim %v: %q of lane %q after a lower lane", payloads(rows), r.Payload, lane)
		}
		rank = laneRank(lane)
		if r.ID <= c.lastNew[lane] {
			t.Fatalf("claim %v: %q out of its lane's append order", payloads(rows), r.Payload)
		}
		c.lastNew[lane] = r.ID
		c.given[r.BatchID] = true
		c.note(r.BatchID, "given to row %d %q", r.ID, r.Payload)
	}
	dieAt := len(rows)
	if maxAttempts > 0 && rng.IntN(4) == 0 {
		dieAt = rng.IntN(len(rows) + 1)
	}
	var received []uint64
	for i, r := range rows {
		if i == dieAt {
			c.settled = false
			c.update(func(tx *Tx) error { return tx.Release(ids(rows[i:]), c.clk.MS()) })
			for _, r := range rows[i:] {
				c.note(r.BatchID, "released row %d", r.ID)
			}
			break
		}
		c.sending(r.BatchID)
		reply := c.src.Batch(r.BatchID, r.Payload)
		c.note(r.BatchID, "sent row %d %q: %s", r.ID, r.Payload, reply)
		if reply == protocol.ReplyReceived {
			received = append(received, r.ID)
			continue
		}
		c.update(func(tx *Tx) error {
			charge := maxAttempts > 0 && rng.IntN(2) == 0
			if _, err := tx.Fail([]uint64{r.ID}, charge, c.clk.MS()+int64(rng.IntN(100)), maxAttempts, "queue full", c.clk.MS()); err != nil {
				return err
			}
			return tx.Release(ids(rows[i+1:]), c.clk.MS())
		})
		break
	}
	c.update(func(tx *Tx) error { return tx.Receive(received, c.clk.MS()) })
}
