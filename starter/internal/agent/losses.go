package agent

import (
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/account"
)

// lossAt is a loss an input reported (input.Event.Loss), after the first
// at rows of its write.
type lossAt struct {
	at   int
	loss *input.Loss
}

// lossAppender is the queue transaction that can record an input's loss
// in the stream: the WAL's, which writes a gap record with
// agent.account on and nothing with it off.
type lossAppender interface {
	AppendLoss(sourceID string, l *input.Loss) error
}

// noteLoss records l after the rows planned so far.
func (w *sourceWrite) noteLoss(l *input.Loss) {
	w.losses = append(w.losses, lossAt{at: len(w.payloads), loss: l})
}

// appendRows appends the write's rows, each loss between the rows read
// before and after it.
func (w *sourceWrite) appendRows(tx queueTx) error {
	done := 0
	for _, l := range w.losses {
		if l.at > done {
			if err := tx.Append(w.id, w.payloads[done:l.at]); err != nil {
				return err
			}
			done = l.at
		}
		if la, ok := tx.(lossAppender); ok {
			if err := la.AppendLoss(w.id, l.loss); err != nil {
				return err
			}
		}
	}
	if done < len(w.payloads) {
		return tx.Append(w.id, w.payloads[done:])
	}
	return nil
}

// AppendLoss writes a gap record for l when agent.account is on.
func (t walTx) AppendLoss(sourceID string, l *input.Loss) error {
	if t.q.seq == nil {
		return nil // off: the stream stays as the Java agent's
	}
	off := [2]int64{l.From, l.To}
	return t.tx.AppendGapRecords([]account.Record{{Input: sourceID, Reason: l.Reason, File: l.Path,
		Offsets: &off, Bytes: max(0, l.To-l.From)}})
}

// inputClock is the wall clock the inputs stamp their events with: the
// one whose jumps repair the times (Options.Clock), nil for time.Now.
func (r *Agent) inputClock() func() time.Time {
	if r.opts.Clock == nil {
		return nil
	}
	return r.opts.Clock.Wall
}
