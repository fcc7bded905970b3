package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/lanes"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// queue.drain values.
const (
	// DrainOldestFirst sends each lane's rows in the order they were
	// appended.
	DrainOldestFirst = "oldest-first"
	// DrainNewestFirst sends the rows of a lane appended since the link
	// to the engine last came back (and, at start, since the agent
	// started) before the older ones, the backlog, which still gets at
	// least queue.backlog-share of the rows sent. Each part keeps its
	// order.
	DrainNewestFirst = "newest-first"
)

// queue.drop-from values.
const (
	// DropFromOldest: when-full: drop-oldest deletes the oldest rows,
	// whatever their lane.
	DropFromOldest = "oldest"
	// DropFromLowestLane: it deletes the oldest rows of the lowest lane
	// first, then of the lane above, and so on.
	DropFromLowestLane = "lowest-lane"
)

// defaultBacklogShare is queue.backlog-share's default.
const defaultBacklogShare = 0.2

// LaneSpec is one entry of queue.lanes.
type LaneSpec struct {
	// Name names the lane in status, metrics and the WAL.
	Name string `yaml:"name"`
	// When is a boolean expression over the event (the processors'
	// language); the first lane whose When holds takes the event. The one
	// lane without When is the default lane, taking every other event;
	// when no lane lacks When, a lane "default" is added last.
	When string `yaml:"when"`
	// MinShare is the least share of the rows sent that goes to the lane
	// while it has rows waiting, 0 to 1; the shares of all lanes add up
	// to 1 at most.
	MinShare float64 `yaml:"min-share"`
}

// defaultLaneName names the default lane added when queue.lanes has none.
const defaultLaneName = "default"

// Reorders says whether the queue settings reorder rows: the claims then
// go through a drainPlan and the WAL gives batch ids at claim.
func (q QueueSettings) Reorders() bool {
	return len(q.Lanes) > 0 || q.Drain == DrainNewestFirst
}

// validateDrain checks queue.drain, queue.backlog-share and queue.lanes.
func (q QueueSettings) validateDrain(p *check.Problems) {
	if q.Drain != DrainOldestFirst && q.Drain != DrainNewestFirst {
		p.Add("drain", "must be %s or %s, got %q", DrainOldestFirst, DrainNewestFirst, q.Drain)
	}
	if q.DropFrom != DropFromOldest && q.DropFrom != DropFromLowestLane {
		p.Add("drop-from", "must be %s or %s, got %q", DropFromOldest, DropFromLowestLane, q.DropFrom)
	}
	if !(q.BacklogShare >= 0 && q.BacklogShare <= 1) {
		p.Add("backlog-share", "must be between 0 and 1, got %v", q.BacklogShare)
	}
	if len(q.Lanes) == 0 {
		return
	}
	seen := map[string]bool{}
	defaults := 0
	shares := make([]float64, 0, len(q.Lanes))
	for i, l := range q.Lanes {
		key := fmt.Sprintf("lanes[%d]", i)
		switch {
		case l.Name == "" || len(l.Name) > wal.MaxLaneName:
			p.Add(key+".name", "must be 1 to %d bytes, got %q", wal.MaxLaneName, l.Name)
		case seen[l.Name]:
			p.Add(key+".name", "lane %q is named twice", l.Name)
		}
		seen[l.Name] = true
		if l.When == "" {
			defaults++
		} else if _, err := processing.NewCondition(l.When); err != nil {
			p.Add(key+".when", "%v", err)
		}
		if !(l.MinShare >= 0 && l.MinShare <= 1) {
			p.Add(key+".min-share", "must be between 0 and 1, got %v", l.MinShare)
		}
		shares = append(shares, l.MinShare)
	}
	if defaults > 1 {
		p.Add("lanes", "%d lanes have no when; at most one, the default lane, may", defaults)
	}
	if len(q.Lanes)+1 > lanes.MaxQueues {
		p.Add("lanes", "%d lanes; at most %d", len(q.Lanes), lanes.MaxQueues-1)
	} else if _, err := lanes.New(shares); err != nil {
		p.Add("lanes", "the min-share of the lanes add up to more than 1")
	}
}

// laneRule is a lane as the queue uses it.
type laneRule struct {
	name string
	// walLane is the lane's name in the WAL: "" for the default lane.
	walLane string
}

// drainPlan decides what each claim takes: from which lane, and within
// it whether new rows or the backlog. Owned by the loop (through
// walQueue): not safe for concurrent use.
type drainPlan struct {
	lanes  []laneRule // highest first, the default lane among them
	byLane *lanes.Scheduler
	newest bool
	// split is, per lane, new rows (queue 0) against the backlog (queue
	// 1), for newest-first.
	split []*lanes.Scheduler
	// conds are the lanes' conditions in lane order, condLane the WAL
	// lane of each: an event is decoded once for all of them.
	conds    []*processing.Condition
	condLane []string
	// dropOrder is the WAL lanes, lowest first, for queue.drop-from:
	// lowest-lane; nil otherwise.
	dropOrder []string
	// mark: rows with ids >= mark are new. remark moves it to the next
	// row id at the next claim: at start and when the link comes back.
	mark   uint64
	remark bool
}

// newDrainPlan builds the plan of q; nil when q does not reorder rows.
func newDrainPlan(q QueueSettings) (*drainPlan, error) {
	if !q.Reorders() {
		return nil, nil
	}
	specs := q.Lanes
	hasDefault := false
	for _, l := range specs {
		hasDefault = hasDefault || l.When == ""
	}
	if !hasDefault {
		specs = append(specs[:len(specs):len(specs)], LaneSpec{Name: defaultLaneName})
	}
	d := &drainPlan{newest: q.Drain == DrainNewestFirst, remark: true}
	shares := make([]float64, len(specs))
	for i, l := range specs {
		r := laneRule{name: l.Name}
		if l.When != "" {
			c, err := processing.NewCondition(l.When)
			if err != nil {
				return nil, fmt.Errorf("queue.lanes[%d].when: %w", i, err)
			}
			r.walLane = l.Name
			d.conds, d.condLane = append(d.conds, c), append(d.condLane, l.Name)
		}
		d.lanes = append(d.lanes, r)
		shares[i] = l.MinShare
		if d.newest {
			s, err := lanes.New([]float64{0, q.BacklogShare})
			if err != nil {
				return nil, fmt.Errorf("queue.backlog-share: %w", err)
			}
			d.split = append(d.split, s)
		}
	}
	if q.DropFrom == DropFromLowestLane {
		for i := len(d.lanes) - 1; i >= 0; i-- {
			d.dropOrder = append(d.dropOrder, d.lanes[i].walLane)
		}
	}
	var err error
	if d.byLane, err = lanes.New(shares); err != nil {
		return nil, fmt.Errorf("queue.lanes: %w", err)
	}
	return d, nil
}

// walLanes are the names the WAL stores lanes under: every lane but the
// default one, highest first.
func (d *drainPlan) walLanes() []string {
	var out []string
	for _, l := range d.lanes {
		if l.walLane != "" {
			out = append(out, l.walLane)
		}
	}
	return out
}

// classify returns the WAL lane of an event: the first lane whose
// condition holds; the default lane when none does, and for an event
// that is not a JSON object or on which a condition fails.
func (d *drainPlan) classify(payload []byte) string {
	if i := processing.FirstMatch(d.conds, payload); i >= 0 {
		return d.condLane[i]
	}
	return ""
}

// linkUp says the link to the engine came back: the rows appended from
// now on are new.
func (d *drainPlan) linkUp() { d.remark = true }

// claimTx is what a drainPlan needs of a WAL transaction.
type claimTx interface {
	NextRowID() uint64
	DueUpTo(r wal.ClaimRange, limit int) int
	ClaimFrom(r wal.ClaimRange, limit, maxBytes int, now int64, fn func(r *wal.Row)) (int, bool, error)
}

// claim claims up to n rows and maxBytes payload bytes (the first row of
// each part whatever its size, so a claim may pass maxBytes by a row or
// so), lane by lane as the schedulers split them, and
// hands each to fn in the order they are to be sent: higher lanes first,
// in a lane new rows before the backlog, each in append order.
func (d *drainPlan) claim(tx claimTx, n, maxBytes int, now time.Time, fn func(r *wal.Row)) (claimed int, bounded bool, err error) {
	if d.remark {
		d.mark, d.remark = tx.NextRowID(), false
	}
	parts := make([][]wal.ClaimRange, len(d.lanes))
	avail := make([]int, len(d.lanes))
	sub := make([][]int, len(d.lanes))
	for i, l := range d.lanes {
		if d.newest {
			parts[i] = []wal.ClaimRange{{Lane: l.walLane, From: d.mark}, {Lane: l.walLane, Below: d.mark}}
		} else {
			parts[i] = []wal.ClaimRange{{Lane: l.walLane}}
		}
		sub[i] = make([]int, len(parts[i]))
		for j, r := range parts[i] {
			sub[i][j] = tx.DueUpTo(r, n)
			avail[i] += sub[i][j]
		}
	}
	used := 0
	count := func(r *wal.Row) { used += len(r.Payload); fn(r) }
	for i, g := range d.byLane.Split(n, avail) {
		if g == 0 {
			continue
		}
		grants := []int{g}
		if d.newest {
			grants = d.split[i].Split(g, sub[i])
		}
		for j, r := range parts[i] {
			if grants[j] == 0 {
				continue
			}
			budget := 0
			if maxBytes > 0 {
				if budget = maxBytes - used; budget <= 0 {
					return claimed, true, nil
				}
			}
			got, bounded, err := tx.ClaimFrom(r, grants[j], budget, now.UnixMilli(), count)
			if err != nil {
				return claimed, false, err
			}
			claimed += got
			if bounded && got < grants[j] {
				return claimed, true, nil // at maxBytes
			}
		}
	}
	return claimed, claimed >= n, nil
}

// LaneStatus is one lane's backlog in Status.
type LaneStatus struct {
	Name string
	// Rows are the lane's due PENDING rows (rows backed off after a
	// failed send are not counted per lane).
	Rows int64
	// OldestAge is the age of its oldest due row; 0 when it has none.
	OldestAge time.Duration
	// Bytes are the payload bytes of its due rows.
	Bytes int64
}

// laneStatus reads each lane's backlog.
func (d *drainPlan) laneStatus(tx *wal.ReadTx, now time.Time) ([]LaneStatus, error) {
	out := make([]LaneStatus, 0, len(d.lanes))
	var errs []error
	for _, l := range d.lanes {
		b, err := tx.Backlog(l.walLane, 0, 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st := LaneStatus{Name: l.name, Rows: b.Rows, Bytes: b.Bytes}
		if b.OldestCreated > 0 {
			st.OldestAge = max(0, now.Sub(time.UnixMilli(b.OldestCreated)))
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}
