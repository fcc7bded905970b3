package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
)

// CHECKPOINT delivery (agent.delivery-guarantee: CHECKPOINT): a row the
// engine answered RECEIVED is only in the job's memory, so it moves to
// RECEIVED in the WAL and stays there, never sent again on its own, until
// the engine says a completed checkpoint covers its batch id (ACK:<w> to a
// __COMMIT__: a commit barrier of a Send, or a poll). On every new session
// the rows held as received are settled before any batch goes out: the
// engine is asked about each, and those it lost are sent again, lowest
// first (transport.Committer). The loop owns the decisions; the sender
// only runs the settle and poll jobs it is handed.

// checkpointTx is what CHECKPOINT delivery needs of a transaction.
type checkpointTx interface {
	// Receive moves claimed rows the engine answered RECEIVED to RECEIVED.
	Receive(ids []uint64, now time.Time) error
	// AckThrough acks every RECEIVED row whose batch id is <= watermark
	// and says how many it acked.
	AckThrough(watermark int64, now time.Time) (int, error)
}

// checkpointQueue is what CHECKPOINT delivery reads outside transactions.
type checkpointQueue interface {
	// Received lists the rows held as received, ascending by batch id.
	Received() ([]receivedRow, error)
	// FirstReceived is the received row with the lowest row id, the
	// oldest: what a poll asks about, at no cost in the backlog.
	FirstReceived() (receivedRow, bool, error)
	// Payload reads a row's stored payload; safe from any goroutine.
	Payload(id uint64) ([]byte, bool, error)
	// FirstPending says when the PENDING row with the lowest row id is
	// due (a failed row waits for its retry backoff); ok is false when
	// no row is PENDING.
	FirstPending() (due time.Time, ok bool, err error)
}

// receivedRow is a row held as received.
type receivedRow struct {
	ID      uint64
	BatchID int64
}

// settleReq is a settle or poll job: the batch ids to ask about and where
// to find the rows of those the engine lost.
type settleReq struct {
	ids   []int64
	rowOf map[int64]uint64
	read  func(id uint64) ([]byte, bool, error)
	// poll: the session is settled; this asks whether a checkpoint
	// covers the lowest id held as received.
	poll bool
}

// checkpointing is the loop's state of CHECKPOINT delivery.
type checkpointing struct {
	q       checkpointQueue
	poll    time.Duration
	timeout time.Duration

	// needSettle: the sender's session is, or may be, new, or a job came
	// back with a row not RECEIVED: no job goes out before a settle job
	// came back without error.
	needSettle bool
	// resultsUncommitted: results that put rows back to PENDING are not
	// in the WAL yet; the settle waits for them (see job).
	resultsUncommitted bool
	// reported is the highest watermark the sender reported; applied,
	// the highest acked in the WAL.
	reported, applied int64
	// lastAsk is when the engine was last asked (a settle, a poll, or a
	// Send, whose barriers ask).
	lastAsk time.Time
	// received is the rows held as received as of the last commit;
	// waitingSince, since when some have waited without the watermark
	// moving (zero when none wait).
	received     int64
	waitingSince time.Time
	// stalled: the ERROR about a checkpoint that does not come was logged;
	// published is the stall reason last published.
	stalled   bool
	published string
}

func newCheckpointing(q checkpointQueue, s Settings) *checkpointing {
	return &checkpointing{q: q, poll: s.CheckpointPoll, timeout: s.CheckpointTimeout, needSettle: true}
}

// holdsClaims says whether new jobs must wait for a settle.
func (c *checkpointing) holdsClaims() bool { return c != nil && c.needSettle }

// accept takes what a job's result says for checkpointing, and reports
// whether the result needs no more handling (an unsettled session is not
// an outage).
func (c *checkpointing) accept(res *jobResult, now time.Time, log *slog.Logger) (handled bool) {
	c.reported = max(c.reported, res.watermark)
	if req := res.job.settle; req != nil {
		c.lastAsk = now
		switch {
		case errors.Is(res.err, transport.ErrUnsettled):
			c.needSettle = true // a poll found a new session
			return true
		case res.err != nil:
		case req.poll:
			// The engine lost the id without the session ending: settle.
			c.needSettle = len(res.answers) == 1 && res.answers[0].Verdict.Lost()
		default:
			c.needSettle = false
			c.logLost(res, log)
		}
		return false
	}
	if errors.Is(res.err, transport.ErrUnsettled) {
		c.needSettle, c.resultsUncommitted = true, true
		return true
	}
	if !res.skipped && res.err == nil && incomplete(res) {
		// A row failed on a session that lives on: the rows after it
		// went back too (keepOrder), and nothing is claimed before it
		// goes again. (A Send that failed left no session, and the next
		// one comes back ErrUnsettled.)
		c.needSettle, c.resultsUncommitted = true, true
	}
	if !res.skipped && res.err == nil {
		c.lastAsk = now
	}
	return false
}

// incomplete says whether a row job has a row the engine did not answer
// RECEIVED.
func incomplete(res *jobResult) bool {
	for _, r := range res.results {
		if r.Outcome != transport.Received {
			return true
		}
	}
	return false
}

// logLost says what a settle found lost and sent again.
func (c *checkpointing) logLost(res *jobResult, log *slog.Logger) {
	lost := 0
	for _, a := range res.answers {
		if a.Verdict.Lost() {
			lost++
		}
	}
	if lost == 0 || res.job.settle.poll {
		return
	}
	received := 0
	for _, r := range res.resent {
		if r.Outcome == transport.Received {
			received++
		}
	}
	log.Warn("engine lost rows it had received (a restart or a restore from its last checkpoint); sent them again before any new one",
		slog.Int("asked", len(res.answers)), slog.Int("lost", lost), slog.Int("received_again", received))
}

// job returns the settle or poll job due now, if any: only when no other
// job is out, so that nothing new precedes a settle.
func (c *checkpointing) job(now time.Time, jobsOut int) (*settleReq, error) {
	if jobsOut > 0 {
		return nil, nil
	}
	poll := !c.needSettle
	if poll && (c.received == 0 || now.Sub(c.lastAsk) < c.poll) {
		return nil, nil
	}
	if poll {
		first, ok, err := c.q.FirstReceived()
		if err != nil {
			return nil, fmt.Errorf("find the oldest row held as received: %w", err)
		}
		if !ok {
			c.lastAsk = now
			return nil, nil
		}
		// The oldest: a checkpoint that covers it answers ACK with the
		// watermark, which acks every row up to it at once.
		return &settleReq{ids: []int64{first.BatchID}, poll: true}, nil
	}
	// The first batch of a session must be the lowest row the agent
	// holds (keepOrder): the settle, and the claims after it, wait until
	// the rows just put back are in the WAL and the lowest PENDING row is
	// due, or a claim would pass over it.
	if c.resultsUncommitted {
		return nil, nil
	}
	due, ok, err := c.q.FirstPending()
	if err != nil {
		return nil, fmt.Errorf("find the oldest row waiting to be sent: %w", err)
	}
	if ok && due.After(now) {
		return nil, nil
	}
	rows, err := c.q.Received()
	if err != nil {
		return nil, fmt.Errorf("list the rows held as received: %w", err)
	}
	req := &settleReq{rowOf: make(map[int64]uint64, len(rows)), read: c.q.Payload, ids: make([]int64, len(rows))}
	for i, r := range rows {
		req.rowOf[r.BatchID] = r.ID
		req.ids[i] = r.BatchID
	}
	return req, nil
}

// committed takes a committed transaction's figures: the watermark acked
// and the rows still held as received.
func (c *checkpointing) committed(now time.Time, ackedThrough int64, received int64) {
	c.resultsUncommitted = false
	moved := ackedThrough > c.applied
	c.applied = max(c.applied, ackedThrough)
	switch {
	case received == 0:
		c.waitingSince = time.Time{}
	case c.received == 0 || moved:
		c.waitingSince = now
	}
	c.received = received
}

// stall returns why health is degraded, "" when it is not: rows have
// waited for a checkpoint longer than the timeout.
func (c *checkpointing) stall(now time.Time, log *slog.Logger) string {
	if c.waitingSince.IsZero() || now.Sub(c.waitingSince) < c.timeout {
		if c.stalled {
			log.Info("engine checkpoints cover the rows held as received again")
		}
		c.stalled = false
		return ""
	}
	waited := now.Sub(c.waitingSince).Round(time.Second)
	reason := fmt.Sprintf("degraded: no engine checkpoint for %s while %d rows wait for one", waited, c.received)
	if !c.stalled {
		c.stalled = true
		log.Error("the engine has not completed a checkpoint covering the rows it received; they stay in the WAL, count toward queue.max-bytes and are resent if the engine loses them",
			slog.Duration("waited", waited), slog.Int64("rows_received", c.received),
			slog.String("fix", "enable checkpointing in the SeaTunnel job (env { checkpoint.interval = 10000 }) and check that its checkpoints complete, or use agent.delivery-guarantee: BEST_EFFORT"))
	}
	return reason
}

// FirstPending is when the PENDING row with the lowest row id is due.
func (q *walQueue) FirstPending() (time.Time, bool, error) {
	pending := wal.StatusPending
	var rows []wal.Row
	err := q.w.View(func(tx *wal.ReadTx) error {
		var err error
		rows, err = tx.List(&pending, 0, 1)
		return err
	})
	if err != nil || len(rows) == 0 {
		return time.Time{}, false, err
	}
	return time.UnixMilli(rows[0].NotBefore), true, nil
}
