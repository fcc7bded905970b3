package agent

import (
	"bytes"
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// WAL meta keys owned by the agent.
const (
	// metaInputID records the input id the positions are stored under, so
	// a lost edge-agent.id file does not orphan them.
	metaInputID = "input_id"
	// metaStartedPrefix + input id is present once that input has run.
	metaStartedPrefix = "input_started:"
)

// walQueue adapts the bbolt WAL to the loop's queue.
type walQueue struct {
	w           *wal.WAL
	retention   time.Duration
	maxAttempts int
	cleanupMax  int
	maxBytes    int64
	// whenFull and maxAge are queue.when-full and queue.max-age-ms;
	// nextDropCheck is when Drop next walks the oldest groups for age or
	// without anything over the bound it could drop.
	whenFull      string
	maxAge        time.Duration
	nextDropCheck time.Time
	// inputDrop are the inputs' queue-drop policies other than normal
	// (inputDropPolicies), set once their ids are settled.
	inputDrop map[string]wal.DropPolicy
	// keepsNever: some input has queue-drop: never (setInputDrop).
	keepsNever bool
	// dropHeld: the last size drop left the queue above maxBytes with
	// nothing it may drop; the next walk waits for nextDropCheck.
	dropHeld bool
	// queued is the payload bytes of the rows in the WAL as of the last
	// transaction (wal.Counts.PayloadBytes).
	queued int64
	// drain, when set (queue.lanes, queue.drain: newest-first), classifies
	// appended rows into lanes and decides what each claim takes; lanes
	// is its last status per lane, read at most every laneStatusEvery.
	drain   *drainPlan
	lanes   []LaneStatus
	lanesAt time.Time
	now     func() time.Time
	// rows is Append's list of the rows to append, kept for the next
	// group (the loop commits one transaction at a time): allocated per
	// group it was a zeroed 160 KiB per 4,096 rows.
	rows []wal.NewRow
	// seq stamps rows with "_input" and "_seq" (agent.account); nil
	// when off.
	seq *sequencer
	// stamps records clock epochs and repairs the times of rows stamped
	// before a jump; nil without a clock (Options.Clock).
	stamps *stampRepair
}

var _ queue = (*walQueue)(nil)

type walStart struct {
	q *walQueue
	// opens are the saved positions and first-start flag of every input,
	// by id.
	opens map[string]input.OpenOptions
	// sending are rows left SENDING by the previous run that are still to
	// be returned to PENDING (only when the disk was full at start).
	sending []uint64
}

// openWAL opens the WAL, returns SENDING rows to PENDING, settles the input
// id and reads the input's saved positions, in one transaction. On a full
// disk the rows left SENDING are not returned to PENDING at once (that
// rewrites every one of them, more than the WAL's reserve may hold): start
// goes on without, and the loop returns them a few at a time, as
// delivery frees space.
func (r *Agent) openWAL() (*walStart, error) {
	// A Config built in code may hold a relative path; Load resolves it.
	o := r.opts.WAL
	o.Path = paths.Resolve(r.opts.Home, o.Path)
	o.Now, o.Logger = r.now, r.log
	// CHECKPOINT: an id given up must still reach the engine, as a
	// stand-in record, or the job's watermark stops there for good.
	o.GapFree = r.opts.Agent.Delivery == DeliveryCheckpoint
	drain, err := newDrainPlan(r.opts.Queue)
	if err != nil {
		return nil, err
	}
	if drain != nil {
		// Ids given at claim; with GapFree each kept until delivered.
		o.Lanes, o.SendOrderBatchIDs = drain.walLanes(), true
	}
	if r.opts.Agent.Account {
		o.GapRecords = &wal.GapOrigin{Host: r.host, AgentID: r.opts.IDs.Agent}
	}
	w, err := wal.Open(o)
	if err != nil {
		return nil, fmt.Errorf("open WAL: %w", err)
	}
	q := &walQueue{
		w:           w,
		retention:   r.opts.Queue.AckedRetention,
		maxAttempts: r.opts.Retry.MaxAttempts,
		cleanupMax:  max(1, r.opts.Queue.CleanupBatchSize),
		maxBytes:    r.opts.Queue.MaxBytes,
		whenFull:    r.opts.Queue.WhenFull,
		maxAge:      r.opts.Queue.MaxAge,
		drain:       drain,
		now:         r.now,
	}
	if r.opts.Agent.Account {
		q.seq = &sequencer{}
	}
	if r.opts.Clock != nil {
		q.stamps = &stampRepair{clock: r.opts.Clock}
	}
	st, err := r.startTx(q, true)
	if wal.IsNoSpace(err) {
		r.log.Warn("disk full at start: rows left SENDING by the previous run return to PENDING a few at a time as delivery frees space",
			slog.String(keyError, err.Error()))
		st, err = r.startTx(q, false)
	}
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open WAL %s: %w", o.Path, err)
	}
	return st, nil
}

// startTx is openWAL's transaction; resurrect=false leaves SENDING rows
// as they are and lists them in walStart.sending.
func (r *Agent) startTx(q *walQueue, resurrect bool) (*walStart, error) {
	st := &walStart{q: q}
	var (
		resurrected int
		settled     Settlement
	)
	nowMs := r.now().UnixMilli()
	err := q.w.Update(func(tx *wal.Tx) error {
		st.sending, resurrected = nil, 0
		if resurrect {
			n, err := tx.ResurrectSending(nowMs)
			if err != nil {
				return fmt.Errorf("return SENDING rows to PENDING: %w", err)
			}
			resurrected = n
		} else {
			st.sending = tx.SendingIDs()
		}
		q.queued = tx.Counts().PayloadBytes
		drops := dropStatus(tx.DropTotals())
		r.pub.set(func(p *published) { p.drops = drops })
		var err error
		settled, err = settleWithWAL(tx, r.opts.InputList, r.opts.IDs)
		if err != nil {
			return err
		}
		st.opens, err = openOptions(tx, settled.Specs)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.settled(settled)
	// Logged once committed: a failed transaction changed nothing.
	if settled.Warning != "" {
		r.log.Warn(settled.Warning, settled.WarnAttrs...)
	}
	if resurrected > 0 {
		r.log.Info("rows left SENDING by the previous run are PENDING again", slog.Int("rows", resurrected))
	}
	return st, nil
}

// openOptions reads, for each input, whether it ran against this WAL
// before and its saved positions.
func openOptions(tx *wal.Tx, specs []InputSpec) (map[string]input.OpenOptions, error) {
	out := make(map[string]input.OpenOptions, len(specs))
	for _, sp := range specs {
		started, err := tx.Meta(metaStartedPrefix + sp.ID)
		if err != nil {
			return nil, fmt.Errorf("read meta: %w", err)
		}
		saved, err := tx.Positions(sp.ID)
		if err != nil {
			return nil, fmt.Errorf("read positions of input %s: %w", sp.ID, err)
		}
		out[sp.ID] = input.OpenOptions{Saved: saved, FirstStart: started == nil}
	}
	return out, nil
}

// settleWithWAL settles the inputs' ids with what the WAL recorded and
// records the decision for the next start.
func settleWithWAL(tx *wal.Tx, specs []InputSpec, ids IDs) (Settlement, error) {
	stored, err := tx.Meta(metaInputID)
	if err != nil {
		return Settlement{}, fmt.Errorf("read meta: %w", err)
	}
	st, err := Settle(specs, Known{File: ids.Input, WAL: string(stored)})
	if err != nil {
		return Settlement{}, fmt.Errorf("start edge agent: %w", err)
	}
	if st.Record != "" && st.Record != string(stored) {
		if err := tx.SetMeta(metaInputID, []byte(st.Record)); err != nil {
			return Settlement{}, fmt.Errorf("write meta: %w", err)
		}
	}
	return st, nil
}

func (q *walQueue) Update(fn func(tx queueTx) error) error {
	return q.w.Update(func(tx *wal.Tx) error { return fn(walTx{q: q, tx: tx}) })
}

// Full compares the payload bytes queued in the WAL with queue.max-bytes.
// Neither the file size (bbolt never shrinks its file) nor wal.UsedBytes
// (it counts the whole preallocated chunk, 16 MiB for a new file) falls
// back once rows are acked by a small enough amount, so small limits would
// pause the input for good; the payload total does, exactly.
//
// Under when-full: drop-oldest a pause ends as soon as the queue is within
// the bound again, not a quarter below it: the drops keep the queue at the
// bound, never under it, so a queue paused by rows no drop may touch (in
// flight, received) and then brought back by the drops once those failed
// would otherwise stay paused until the engine took rows again. A queue
// held by queue-drop: never rows keeps the margin: reading there would
// only drop the rows just read.
func (q *walQueue) Full(paused bool) (bool, int64) {
	if q.maxBytes <= 0 {
		return false, q.queued
	}
	if paused && (q.whenFull != WhenFullDropOldest || q.dropHeld) {
		return q.queued > lowWater(q.maxBytes), q.queued
	}
	return q.queued > q.maxBytes, q.queued
}

// setInputDrop takes the queue-drop policies of specs, whose ids are
// settled.
func (q *walQueue) setInputDrop(specs []InputSpec) {
	q.inputDrop = inputDropPolicies(specs)
	q.keepsNever = false
	for _, p := range q.inputDrop {
		q.keepsNever = q.keepsNever || p == wal.DropNever
	}
}

func (q *walQueue) FileBytes() int64 { return q.w.Size() }

func (q *walQueue) Close() error { return q.w.Close() }

func (q *walQueue) Positions(sourceID string) (map[string][]byte, error) {
	var saved map[string][]byte
	err := q.w.View(func(tx *wal.ReadTx) error {
		var err error
		saved, err = tx.Positions(sourceID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read positions of input %s: %w", sourceID, err)
	}
	return saved, nil
}

func (q *walQueue) Started(sourceID string) (bool, error) {
	var started bool
	err := q.w.View(func(tx *wal.ReadTx) error {
		v, err := tx.Meta(metaStartedPrefix + sourceID)
		started = v != nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("read meta of input %s: %w", sourceID, err)
	}
	return started, nil
}

// walTx adapts one wal.Tx.
type walTx struct {
	q  *walQueue
	tx *wal.Tx
}

func (t walTx) Append(sourceID string, payloads [][]byte) error {
	if t.q.seq != nil {
		var err error
		if payloads, err = t.q.seq.stamp(t.tx, sourceID, payloads); err != nil {
			return err
		}
	}
	rows := t.q.rows[:0]
	for _, p := range payloads {
		rows = append(rows, wal.NewRow{SourceID: sourceID, Payload: p})
	}
	if d := t.q.drain; d != nil {
		for i := range rows {
			rows[i].Lane = d.classify(rows[i].Payload)
		}
	}
	first, _, err := t.tx.Append(rows)
	if err == nil && t.q.stamps != nil && first > 0 {
		err = t.q.stamps.observe(t.tx, first)
	}
	clear(rows) // the WAL copied the payloads: hold none of them
	if t.q.seq != nil {
		clear(payloads) // the sequencer's list
	}
	t.q.rows = rows[:0]
	return err
}

func (t walTx) SavePositions(sourceID string, pos []input.Position) error {
	ups := make([]wal.PositionUpdate, len(pos))
	for i, p := range pos {
		ups[i] = wal.PositionUpdate{SourceID: sourceID, Key: p.Key, State: p.State}
	}
	return t.tx.SavePositions(ups)
}

func (t walTx) MarkStarted(sourceID string) error {
	return t.tx.SetMeta(metaStartedPrefix+sourceID, []byte{1})
}

// Claim keeps the four fields a job needs straight from the WAL's
// claim: a wal.Row per row, copied here and dropped, was 112 bytes
// allocated per row sent.
func (t walTx) Claim(n, maxBytes int, now time.Time) ([]row, bool, error) {
	out := make([]row, 0, min(n, t.tx.Counts().Pending))
	keep := func(r *wal.Row) {
		out = append(out, row{ID: r.ID, BatchID: r.BatchID, Payload: r.Payload, Attempts: r.Attempts, Source: r.SourceID})
	}
	var bounded bool
	var err error
	if d := t.q.drain; d != nil {
		_, bounded, err = d.claim(t.tx, n, maxBytes, now, keep)
	} else {
		_, bounded, err = t.tx.ClaimFunc(n, maxBytes, now.UnixMilli(), keep)
	}
	if err != nil {
		return nil, false, err
	}
	if t.q.stamps != nil && len(out) > 0 {
		if err := t.q.stamps.repair(t.tx, out); err != nil {
			return nil, false, err
		}
	}
	return out, bounded, nil
}

func (t walTx) Ack(ids []uint64, now time.Time) error {
	return t.tx.Ack(ids, t.q.retention, now.UnixMilli())
}

func (t walTx) Fail(ids []uint64, notBefore time.Time, reason string, now time.Time) (int, error) {
	return t.tx.Fail(ids, true, notBefore.UnixMilli(), t.q.maxAttempts, reason, now.UnixMilli())
}

func (t walTx) Release(ids []uint64, now time.Time) error {
	return t.tx.Release(ids, now.UnixMilli())
}

func (t walTx) CleanupAcked(now time.Time) (int, bool, error) {
	n, err := t.tx.CleanupAcked(now.Add(-t.q.retention).UnixMilli(), t.q.cleanupMax)
	return n, n >= t.q.cleanupMax, err
}

func (t walTx) Drop(now time.Time) (queueDrops, error) {
	q := t.q
	var lim wal.DropLimits
	sized := q.whenFull == WhenFullDropOldest && q.maxBytes > 0
	over := sized && t.tx.Counts().PayloadBytes > q.maxBytes
	if !over {
		q.dropHeld = false
	}
	if !over && (q.maxAge <= 0 || now.Before(q.nextDropCheck)) {
		return queueDrops{sized: sized && q.keepsNever}, nil
	}
	if over && q.dropHeld && now.Before(q.nextDropCheck) {
		// The last walk found nothing it may drop: not at every commit.
		return queueDrops{}, nil
	}
	if q.whenFull == WhenFullDropOldest {
		lim.MaxBytes = q.maxBytes
	}
	if q.maxAge > 0 {
		lim.OlderThanMS = now.Add(-q.maxAge).UnixMilli()
	}
	if q.drain != nil {
		lim.LaneOrder = q.drain.dropOrder
	}
	lim.Inputs = q.inputDrop
	full, age, more, err := t.tx.DropUnsent(lim)
	if err != nil {
		return queueDrops{}, err
	}
	if !more {
		q.nextDropCheck = now.Add(dropRecheck)
	}
	d := queueDrops{full: full, age: age, totals: dropStatus(t.tx.DropTotals())}
	if sized && q.keepsNever && !more {
		d.sized, d.held = true, t.tx.Counts().PayloadBytes > q.maxBytes
	}
	q.dropHeld = d.held
	return d, nil
}

func (t walTx) Counts() (queueCounts, error) {
	c := t.tx.Counts()
	t.q.queued = c.PayloadBytes
	qc := walCounts(c)
	if d := t.q.drain; d != nil {
		now := t.q.now()
		if t.q.lanes == nil || now.Sub(t.q.lanesAt) >= laneStatusEvery || now.Before(t.q.lanesAt) {
			lanes, err := d.laneStatus(&t.tx.ReadTx, now)
			if err != nil {
				return queueCounts{}, err
			}
			t.q.lanes, t.q.lanesAt = lanes, now
		}
		qc.Lanes = t.q.lanes
	}
	return qc, nil
}

// laneStatusEvery bounds how often the backlog of each lane is counted
// (a walk over its pending runs).
const laneStatusEvery = time.Second

// linkUp tells the drain plan that the link to the engine came back.
func (q *walQueue) linkUp() {
	if q.drain != nil {
		q.drain.linkUp()
	}
}

func walCounts(c wal.Counts) queueCounts {
	qc := queueCounts{
		Pending: int64(c.Pending), Sending: int64(c.Sending), Acked: int64(c.Acked), Dead: int64(c.Dead),
		Received: int64(c.Received), PayloadBytes: c.PayloadBytes,
	}
	if c.OldestPending > 0 {
		qc.OldestPending = time.UnixMilli(c.OldestPending)
	}
	return qc
}

var (
	_ checkpointTx    = walTx{}
	_ checkpointQueue = (*walQueue)(nil)
)

func (t walTx) Receive(ids []uint64, now time.Time) error {
	return t.tx.Receive(ids, now.UnixMilli())
}

func (t walTx) AckThrough(watermark int64, now time.Time) (int, error) {
	return t.tx.AckReceivedThrough(watermark, t.q.retention, now.UnixMilli())
}

// Received lists the rows held as received, ascending by batch id (a
// stand-in row carries an older batch id than its row id says), and
// with batch ids given at claim the rows PENDING again under an id sent
// before (wal.ReadTx.UnsettledFunc): a settle asks about those too, so
// that a fresh job's floor does not confirm them unchecked.
func (q *walQueue) Received() ([]receivedRow, error) {
	var rows []receivedRow
	err := q.w.View(func(tx *wal.ReadTx) error {
		rows = rows[:0]
		return tx.UnsettledFunc(func(id uint64, batchID int64) bool {
			rows = append(rows, receivedRow{ID: id, BatchID: batchID})
			return true
		})
	})
	slices.SortFunc(rows, func(a, b receivedRow) int { return cmp.Compare(a.BatchID, b.BatchID) })
	return rows, err
}

// FirstReceived is the received row with the lowest row id.
func (q *walQueue) FirstReceived() (receivedRow, bool, error) {
	var first receivedRow
	found := false
	err := q.w.View(func(tx *wal.ReadTx) error {
		return tx.ReceivedFunc(func(id uint64, batchID int64, _ int64) bool {
			first, found = receivedRow{ID: id, BatchID: batchID}, true
			return false
		})
	})
	return first, found, err
}

// Payload reads row id's payload, a copy (it outlives the transaction).
func (q *walQueue) Payload(id uint64) ([]byte, bool, error) {
	var out []byte
	var found bool
	err := q.w.View(func(tx *wal.ReadTx) error {
		r, ok, err := tx.Get(id)
		if err != nil || !ok {
			return err
		}
		out, found = bytes.Clone(r.Payload), true
		return nil
	})
	return out, found, err
}
