package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
)

// InputSpec is one input as agent.yaml configures it: an entry of
// `inputs:`, or the single `input:` section, which is a one-entry list.
type InputSpec struct {
	// ID keys the input's rows and saved positions in the WAL; Settle
	// fills it when OptionalID and agent.yaml leaves it out.
	ID string
	// Type picks the factory in Options.Inputs, which gets Config.
	Type   string
	Config input.Config
	// Processors run on each event before it is queued: the entry's
	// own steps, then the agent's.
	Processors []processing.Step
	// Key is where agent.yaml sets the entry ("input", "inputs[2]"), for
	// messages; "" means inputs[i].
	Key string
	// OptionalID says the id may be left out (the `input:` form, as the
	// Java agent's): Settle takes it from the WAL or the identity file.
	OptionalID bool
	// QueueDrop is the entry's queue-drop: which of its rows the WAL's
	// size and age drops take (QueueDropNormal, QueueDropFirst,
	// QueueDropNever; "" is normal).
	QueueDrop string

	// written is ID as agent.yaml gives it, before Settle.
	written string
}

// source is one running input.
type source struct {
	id, typ string
	in      input.Input
	// proc runs the input's processors; nil when it has none.
	proc *processing.Chain
	// view is the input's redaction (processing.RedactionView), which
	// the input stage of a tap shows events through; nil when it has
	// none.
	view *processing.Chain
}

// mixedInputTypes is BOOTSTRAP_READY's input_type when the inputs are of
// more than one type (input_types then lists them).
const mixedInputTypes = "mixed"

func specIDs(specs []InputSpec) []string {
	ids := make([]string, len(specs))
	for i, sp := range specs {
		ids[i] = sp.ID
	}
	return ids
}

func sourceIDs(inputs []*source) []string {
	ids := make([]string, len(inputs))
	for i, s := range inputs {
		ids[i] = s.id
	}
	return ids
}

// openInputs creates and opens every spec, in order (an earlier input is
// the one that reads a file two inputs match). On a failure the inputs
// already opened are closed.
func (r *Agent) openInputs(ctx context.Context, specs []InputSpec, opens map[string]input.OpenOptions) ([]*source, error) {
	out := make([]*source, 0, len(specs))
	for _, sp := range specs {
		proc, err := r.newChain(sp)
		var view *processing.Chain
		if err == nil {
			view, err = processing.New(processing.RedactionView(sp.Processors), processing.Settings{})
		}
		if err != nil {
			closeSources(out)
			return nil, err
		}
		in, err := r.openInput(ctx, sp, opens[sp.ID])
		if err == nil && ctx.Err() != nil {
			_ = in.Close()
			err = fmt.Errorf("start edge agent: %w", ctx.Err())
		}
		if err == nil && proc.Holds() {
			if _, acks := in.(input.Acker); acks {
				_ = in.Close()
				err = fmt.Errorf("open input %s (id %s): dedup holds events, and this input answers its senders only once their events are stored: remove dedup from its processors (and from agent.processors): %w", sp.Type, sp.ID, check.ErrInvalid)
			}
		}
		if err != nil {
			closeSources(out)
			return nil, err
		}
		out = append(out, &source{id: sp.ID, typ: sp.Type, in: in, proc: proc, view: view})
	}
	return out, nil
}

// newChain builds sp's processors (nil when it has none).
func (r *Agent) newChain(sp InputSpec) (*processing.Chain, error) {
	proc, err := processing.New(sp.Processors, processing.Settings{Logger: r.log.With(slog.String("input_id", sp.ID))})
	if err != nil {
		return nil, fmt.Errorf("input %s processors: %w: %w", sp.ID, check.ErrInvalid, err)
	}
	return proc, nil
}

func (r *Agent) openInput(ctx context.Context, sp InputSpec, open input.OpenOptions) (input.Input, error) {
	f, err := r.opts.Inputs.Get(sp.Type)
	if err != nil {
		return nil, fmt.Errorf("open input %s: %w", sp.ID, err)
	}
	in, err := f.Create(sp.Config, input.Settings{
		ID: sp.ID, Logger: r.log.With(slog.String("input_id", sp.ID)),
		AgentID: r.opts.IDs.Agent, Host: r.host, Claims: r.claims, Now: r.inputClock(),
	})
	if err != nil {
		return nil, fmt.Errorf("create input %s (id %s): %w", sp.Type, sp.ID, err)
	}
	if err := in.Open(ctx, open); err != nil {
		_ = in.Close()
		return nil, fmt.Errorf("open input %s (id %s): %w", sp.Type, sp.ID, err)
	}
	return in, nil
}

func closeSources(ss []*source) {
	for _, s := range ss {
		_ = s.in.Close()
	}
}

// wakeMux fans the inputs' Wakeup channels into one the loop waits on. A
// nil *wakeMux has no channel (never ready).
type wakeMux struct {
	c    <-chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// newWakeMux uses the one input's channel as it is; with several it
// forwards each into a shared one from a goroutine per input, until stop.
func newWakeMux(inputs []*source) *wakeMux {
	var chans []<-chan struct{}
	for _, s := range inputs {
		if w, ok := s.in.(input.Waker); ok {
			if c := w.Wakeup(); c != nil {
				chans = append(chans, c)
			}
		}
	}
	switch len(chans) {
	case 0:
		return nil
	case 1:
		return &wakeMux{c: chans[0]}
	}
	out := make(chan struct{}, 1)
	m := &wakeMux{c: out, done: make(chan struct{})}
	for _, c := range chans {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			for {
				select {
				case <-m.done:
					return
				case <-c:
					select {
					case out <- struct{}{}:
					default: // a wake-up is pending already
					}
				}
			}
		}()
	}
	return m
}

// C is the channel that fires when any input may have new data.
func (m *wakeMux) C() <-chan struct{} {
	if m == nil {
		return nil
	}
	return m.c
}

// stop ends the forwarding goroutines; idempotent.
func (m *wakeMux) stop() {
	if m == nil || m.done == nil {
		return
	}
	select {
	case <-m.done:
	default:
		close(m.done)
	}
	m.wg.Wait()
}

// InputStatus is one input's view in Status.
type InputStatus struct {
	ID, Type string
	// Description is what the input says of itself (input.Describer); the
	// zero Description when it says nothing.
	component.Description
}

// inputStatuses asks every input to describe itself; safe from any
// goroutine (Describe is).
func inputStatuses(inputs []*source) []InputStatus {
	out := make([]InputStatus, len(inputs))
	for i, s := range inputs {
		out[i] = InputStatus{ID: s.id, Type: s.typ}
		if d, ok := s.in.(input.Describer); ok {
			out[i].Description = d.Describe()
		}
		if s.proc != nil {
			out[i].Description = out[i].Description.With(s.proc.Stats().Describe())
		}
	}
	return out
}
