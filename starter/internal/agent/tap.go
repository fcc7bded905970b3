package agent

import (
	"bytes"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
	"github.com/edge-agent/edge-agent/starter/internal/tap"
	"github.com/edge-agent/edge-agent/transport"
)

// Tap subscribes to the events of a stage (`edge-agent tap`): a sample,
// never a wait for the pipeline (see package tap). Events of the input
// stage are shown through the input's redaction; the later stages hold
// what the processors made of them. Safe from any goroutine; ErrClosed
// once the agent stopped.
func (r *Agent) Tap(f tap.Filter) (*tap.Sub, error) {
	return r.tap.Subscribe(f)
}

// tapEvents publishes the buffer's events from before on, at stage, for
// input s; the loop's goroutine only.
func (l *loop) tapEvents(stage tap.Stage, s *source, before int, now time.Time) {
	h := l.r.tap
	if !h.Active(stage) {
		return
	}
	for i := before; i < len(l.buf.events); i++ {
		p := l.buf.events[i].Payload
		if p == nil {
			continue
		}
		if stage == tap.StageInput && s.view != nil {
			h.Publish(stage, s.id, func() []byte { return redacted(s.view, p, now) })
			continue
		}
		h.Publish(stage, s.id, func() []byte { return bytes.Clone(p) })
	}
}

// redacted is p through the input's redaction view, as a copy; nil when
// the view left no payload.
func redacted(view *processing.Chain, p []byte, now time.Time) []byte {
	evs := view.Process([]input.Event{{Payload: bytes.Clone(p)}}, 0, now)
	if len(evs) == 0 || evs[0].Payload == nil {
		return nil
	}
	return bytes.Clone(evs[0].Payload)
}

// tapSent publishes the rows of res the engine received.
func (l *loop) tapSent(res *jobResult) {
	h := l.r.tap
	if !h.Active(tap.StageSent) {
		return
	}
	for i, r := range res.results {
		if r.Outcome != transport.Received || i >= len(res.job.rows) {
			continue
		}
		row := res.job.rows[i]
		h.Publish(tap.StageSent, row.Source, func() []byte { return bytes.Clone(row.Payload) })
	}
}
