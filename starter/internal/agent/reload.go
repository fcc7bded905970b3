package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/transport"
)

// ErrNotRunning is returned by Reload when no loop runs (Run has not
// started it yet, or it stopped).
var ErrNotRunning = errors.New("edge agent is not running")

// reloadRequest carries Reload's options to the loop; done gets the one
// outcome.
type reloadRequest struct {
	opts    Options
	replace Replace
	done    chan error
}

// Replace says which plug-ins a reload rebuilds. The caller compares the
// old and the new config (config.Config.Changes): the scheduler does not
// look inside plug-in configs. A changed type always rebuilds.
type Replace struct {
	// Output rebuilds the output.
	Output bool
	// Inputs are the ids, as agent.yaml writes them ("" for an input
	// that leaves its id out), of the inputs whose config changed. An id
	// new to the list is opened and one gone from it is closed anyway;
	// the other inputs keep running untouched.
	Inputs []string
}

// Reload applies new options to the running agent without dropping what
// it buffered: the loop, at its next turn, writes the buffer to the queue,
// lets the sender finish (or release) its in-flight rows, and replaces the
// input and the output when their options changed. A replaced input
// continues from the positions saved in the queue, so a file matched by
// both configs goes on at its offset.
//
// Reload applies Agent (but Delivery), Queue (but what only the WAL's
// Open reads), Retry, InputList, OutputType/Output, RateLimit (in
// place: the output and its connection stay unless replace.Output) and
// ConfigHash.
// WAL, Agent.Delivery, IDs, Home, the registries, Logger, OnReady and Now
// stay as New got them: changing them needs a restart, which the caller
// reports. When the new input or output cannot be built the old ones keep
// running and the error is returned; the agent runs on either way.
//
// It is safe from any goroutine and blocks until the loop applied or
// rejected the options, or ctx is done (the loop then still applies them).
func (r *Agent) Reload(ctx context.Context, opts Options, replace Replace) error {
	if err := opts.validate(); err != nil {
		r.ctr.reloadsFailed.Add(1)
		return fmt.Errorf("reload: %w: %w", check.ErrInvalid, err)
	}
	if opts.Output == nil {
		r.ctr.reloadsFailed.Add(1)
		return fmt.Errorf("reload: output %q has no options: %w", opts.OutputType, check.ErrInvalid)
	}
	req := &reloadRequest{opts: opts, replace: replace, done: make(chan error, 1)}
	select {
	case r.reloads <- req:
	case <-r.loopDone:
		return fmt.Errorf("reload: %w", ErrNotRunning)
	case <-ctx.Done():
		return fmt.Errorf("reload: %w", ctx.Err())
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("reload: %w", ctx.Err())
	}
}

// RejectReload counts a reload refused before it reached Reload (an
// invalid config file), so Snapshot's ConfigReloads covers every attempt.
func (r *Agent) RejectReload() { r.ctr.reloadsFailed.Add(1) }

// reloadState is a reload request the loop took while it waited, to apply
// at its next turn.
type reloadState struct {
	pending *reloadRequest
}

// hold keeps req for take.
func (s *reloadState) hold(req *reloadRequest) { s.pending = req }

// take returns the request held, or one waiting on ch now, or nil.
func (s *reloadState) take(ch <-chan *reloadRequest) *reloadRequest {
	if req := s.pending; req != nil {
		s.pending = nil
		return req
	}
	select {
	case req := <-ch:
		return req
	default:
		return nil
	}
}

// reloadPlan is what a reload replaces: the inputs to close and (re)open,
// and whether the output is rebuilt.
type reloadPlan struct {
	specs   []InputSpec
	rebuild map[string]bool // input ids to close, open, or both
	output  bool
}

func (p *reloadPlan) inputs() bool { return len(p.rebuild) > 0 }

// applyReload runs on the loop goroutine; see Reload. It settles what is in
// flight, builds what changed, and only then installs it: until the
// install nothing of the running agent is replaced.
func (l *loop) applyReload(ctx context.Context, next Options, replace Replace) error {
	r := l.r
	old := r.opts
	next = keepFixed(old, next)
	if err := CheckInputs(next.InputList); err != nil {
		return l.reloadFailed(fmt.Errorf("reload: %w: %w", check.ErrInvalid, err))
	}
	p := reloadPlan{specs: next.InputList}
	p.rebuild = l.in.toRebuild(old, next, p.specs, replace)
	p.output = replace.Output || next.OutputType != old.OutputType
	start := r.now()
	if err := l.quiesce(stopDeadline(old), &p); err != nil {
		// What the old inputs read is not all in the queue: new ones
		// would read it again from the saved positions. Keep the old.
		l.resume(old, false)
		return l.reloadFailed(fmt.Errorf("reload: %w", err))
	}
	r.opts = next
	snd, enc, opened, err := l.build(ctx, &p)
	if err != nil {
		r.opts = old
		l.resume(old, false)
		return l.reloadFailed(fmt.Errorf("reload: %w", err))
	}
	l.install(&p, snd, enc, opened)
	l.resume(next, p.output)
	r.publishExt(l.in.list, l.sender.snd)
	r.pub.set(func(pb *published) {
		pb.outputType, pb.configHash = next.OutputType, next.ConfigHash
	})
	r.ctr.reloadsOK.Add(1)
	l.log.Info("reload applied",
		slog.Bool("input_replaced", p.inputs()), slog.Bool("output_replaced", p.output),
		slog.Duration("took", r.now().Sub(start).Round(time.Millisecond)))
	return nil
}

// quiesce takes the graceful stop's path, short of closing: no new jobs,
// in-flight ones come back (or are released uncharged), the inputs being
// rebuilt are drained, the buffer goes to the queue with its positions.
func (l *loop) quiesce(deadline time.Time, p *reloadPlan) error {
	limit := l.jobs.limit
	l.jobs.limit = 0
	// Rows waiting for the rate cap go back unsent rather than hold the
	// reload up (they may wait for a cap the reload changes).
	l.sender.stopPacing()
	l.settleJobs(deadline)
	if l.stopSender(deadline) {
		// The Send ignored its context and Close: its rows stay SENDING
		// until returned to PENDING like those of a crashed run, and the
		// closed output must be replaced.
		for _, j := range l.jobs.takeAll() {
			for _, row := range j.rows {
				l.resurrect = append(l.resurrect, row.ID)
			}
		}
		p.output = true
		l.log.Error("reload: the output did not stop; its in-flight rows are sent again")
	}
	l.jobs.limit = limit
	if p.inputs() {
		l.drainInputs(func(id string) bool { return p.rebuild[id] })
	}
	return l.flushUntil(deadline)
}

// build opens the new output and inputs p names, with r.opts the new
// options; on failure nothing it opened stays open.
func (l *loop) build(ctx context.Context, p *reloadPlan) (transport.Sender, encoder, []*source, error) {
	var snd transport.Sender
	var enc encoder
	if p.output {
		var err error
		if snd, enc, err = l.r.openSender(); err != nil {
			return nil, nil, nil, err
		}
	}
	if !p.inputs() {
		return snd, enc, nil, nil
	}
	opened, err := l.openChanged(ctx, p.specs, p.rebuild)
	if err != nil {
		if snd != nil {
			_ = snd.Close()
		}
		return nil, nil, nil, err
	}
	return snd, enc, opened, nil
}

// install replaces the inputs and the output p names with those built.
func (l *loop) install(p *reloadPlan, snd transport.Sender, enc encoder, opened []*source) {
	if p.inputs() {
		l.swapInputs(p.specs, p.rebuild, opened)
	}
	if p.output {
		if err := l.sender.snd.Close(); err != nil {
			l.log.Warn("reload: close the previous output", slog.String(keyError, err.Error()))
		}
		l.sender.snd, l.sender.enc = snd, enc
		// What the old output's engine answered says nothing of the new
		// one: idle until its first Send.
		l.r.pub.set(func(p *published) { p.connection = "idle" })
		if l.ck != nil {
			l.ck.needSettle = true // a new client: a new session
		}
	}
}

// keepFixed returns next with what a reload does not change taken from
// old (see Reload).
func keepFixed(old, next Options) Options {
	next.Agent.Delivery = old.Agent.Delivery
	next.WAL = old.WAL
	next.Inputs, next.Outputs = old.Inputs, old.Outputs
	next.Home, next.IDs = old.Home, old.IDs
	next.InputList = keepSettledIDs(old.InputList, next.InputList, old.IDs.Input)
	next.Logger, next.OnReady, next.Now, next.Clock = old.Logger, old.OnReady, old.Now, old.Clock
	return next
}

// keepSettledIDs gives next's entries that may leave their id out the id
// settled at start (fileID, the identity file's, when no entry could):
// ids key saved positions, and change only with a restart. next is
// copied, not changed.
func keepSettledIDs(old, next []InputSpec, fileID string) []InputSpec {
	settled := fileID
	for _, sp := range old {
		if sp.OptionalID {
			settled = sp.ID
		}
	}
	out := slices.Clone(next)
	for i := range out {
		out[i].written = out[i].ID
		if out[i].OptionalID {
			out[i].ID = settled
		}
	}
	return out
}

// settleJobs waits, until deadline, for the jobs already handed to the
// sender to come back, so a reload does not cut sends short (a cut send
// may have reached the engine: it would be sent twice).
func (l *loop) settleJobs(deadline time.Time) {
	t := time.NewTimer(max(0, time.Until(deadline)))
	defer t.Stop()
	for len(l.jobs.out) > 0 {
		select {
		case res := <-l.send.results:
			l.accept(res)
		case <-t.C:
			return
		}
	}
}

// toRebuild returns the ids of the running inputs to close and of
// the inputs to open: those new to the config, gone from it, of another
// type, or whose config changed (replace); all of them when the config
// switched between the `input:` and the `inputs:` forms.
func (in *inputSet) toRebuild(old, next Options, specs []InputSpec, replace Replace) map[string]bool {
	out := make(map[string]bool)
	running := make(map[string]*source, len(in.list))
	for _, s := range in.list {
		running[s.id] = s
	}
	formChanged := optionalID(old.InputList) != optionalID(next.InputList)
	wanted := make(map[string]bool, len(specs))
	for _, sp := range specs {
		wanted[sp.ID] = true
		cur := running[sp.ID]
		switch {
		case cur == nil, formChanged, cur.typ != sp.Type,
			slices.Contains(replace.Inputs, sp.written):
			out[sp.ID] = true
		}
	}
	for id := range running {
		if !wanted[id] || formChanged {
			out[id] = true
		}
	}
	return out
}

// optionalID says whether specs are the single `input:` form.
func optionalID(specs []InputSpec) bool {
	return slices.ContainsFunc(specs, func(sp InputSpec) bool { return sp.OptionalID })
}

// openChanged opens the specs to rebuild (r.opts are the new options) from
// the positions the queue holds for their ids: the buffer was just
// written there, so a file still matched goes on at its offset.
func (l *loop) openChanged(ctx context.Context, specs []InputSpec, rebuild map[string]bool) ([]*source, error) {
	var todo []InputSpec
	opens := make(map[string]input.OpenOptions)
	for _, sp := range specs {
		if !rebuild[sp.ID] {
			continue
		}
		saved, err := l.q.Positions(sp.ID)
		if err != nil {
			return nil, err
		}
		started, err := l.q.Started(sp.ID)
		if err != nil {
			return nil, err
		}
		todo = append(todo, sp)
		opens[sp.ID] = input.OpenOptions{Saved: saved, FirstStart: !started}
	}
	return l.r.openInputs(ctx, todo, opens)
}

// swapInputs closes the inputs being rebuilt or removed and installs the
// new list in config order: kept inputs as they run, opened ones new.
func (l *loop) swapInputs(specs []InputSpec, rebuild map[string]bool, opened []*source) {
	byID := make(map[string]*source, len(l.in.list)+len(opened))
	for _, s := range l.in.list {
		if rebuild[s.id] {
			if err := s.in.Close(); err != nil {
				l.log.Warn("reload: close the previous input", slog.String("input_id", s.id), slog.String(keyError, err.Error()))
			}
			continue
		}
		byID[s.id] = s
	}
	for _, s := range opened {
		byID[s.id] = s
	}
	next := make([]*source, 0, len(specs))
	for _, sp := range specs {
		next = append(next, byID[sp.ID])
	}
	l.setInputs(next)
	if len(opened) > 0 {
		l.markStarted = true // the new inputs' first run is recorded
	}
}

// resume applies o's settings to the loop and the queue and starts a new
// sender loop (o's retry) around the current Sender. A pause the engine imposed
// (a refusal, an unreachable engine) still holds after a reload that kept
// the output; a new output (a fixed token or key, another endpoint) gets
// its first try at once, so a fleet's fix takes effect without waiting
// out output.max-backoff-ms.
func (l *loop) resume(o Options, outputReplaced bool) {
	r := l.r
	l.rowRetry = newRowRetries(o, l.rowRetry.streak)
	l.jobs.size = jobSize(o)
	l.group = newGrouping(o, l.jobs.size, l.walq != nil)
	l.exitOnRefusal = r.exitOnRefusal()
	r.rate.set(o.RateLimit, r.now())
	if q, ok := l.q.(*walQueue); ok {
		q.retention, q.maxAttempts = o.Queue.AckedRetention, o.Retry.MaxAttempts
		q.cleanupMax, q.maxBytes = max(1, o.Queue.CleanupBatchSize), o.Queue.MaxBytes
		q.whenFull, q.maxAge, q.nextDropCheck = o.Queue.WhenFull, o.Queue.MaxAge, time.Time{}
		q.setInputDrop(o.InputList)
	}
	s := l.sender
	fresh := r.newSendLoop(s.snd, s.enc, l.nonMode)
	if outputReplaced {
		l.link = linkPacing{down: !l.nonMode && o.Queue.drops()}
	} else {
		fresh.streak, fresh.holdErr, fresh.holdUntil = s.streak, s.holdErr, s.holdUntil
	}
	l.sender = fresh
	l.claims.hint = true
	l.startSender()
}

func (l *loop) reloadFailed(err error) error {
	l.r.ctr.reloadsFailed.Add(1)
	l.r.pub.setError(err, l.r.now())
	return err
}
