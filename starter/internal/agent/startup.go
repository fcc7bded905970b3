package agent

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/tap"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// maxJobs are the jobs out at once: two groups' worth, so that a commit
// hands out the group it appends while the group before is still out.
const maxJobs = 2 * groupJobs

// NON mode keeps at most this many jobs' worth of rows, and this many
// bytes, in memory before it stops reading input.
const (
	nonQueueJobs  = 8
	nonQueueBytes = 64 << 20
)

// start opens the queue, the sender and the inputs, in that order, so that
// nothing is read before it can be stored; a failure closes what was
// opened and names what failed.
func (r *Agent) start(ctx context.Context) (*loop, error) {
	nonMode := r.opts.Agent.Delivery == DeliveryNon
	l := &loop{
		r:             r,
		log:           r.log,
		sendLog:       unshipped(r.log),
		nonMode:       nonMode,
		rowRetry:      newRowRetries(r.opts, 0),
		jobs:          newJobSlots(jobSize(r.opts)),
		claims:        claimPolicy{hint: true},
		link:          linkPacing{down: !nonMode && r.opts.Queue.drops()},
		cleanup:       cleanupPolicy{off: nonMode},
		markStarted:   true,
		exitOnRefusal: r.exitOnRefusal(),
		memLimit:      newMemoryLimit(r.opts.MemoryLimit),
	}

	opens, err := l.openQueue()
	if err != nil {
		return nil, err
	}
	if r.opts.Agent.Delivery == DeliveryCheckpoint {
		l.ck = newCheckpointing(l.walq, r.opts.Agent)
	}
	if r.wrapQueue != nil {
		l.q = r.wrapQueue(l.q)
	}
	l.group = newGrouping(r.opts, l.jobs.size, l.walq != nil)
	specs := r.opts.InputList

	snd, enc, err := r.openSender()
	if err != nil {
		_ = l.q.Close()
		return nil, err
	}
	l.sender = r.newSendLoop(snd, enc, l.nonMode)

	// The config's order decides who reads a file several inputs match,
	// from the first scan on.
	r.claims.SetOrder(specIDs(specs))
	inputs, err := r.openInputs(ctx, specs, opens)
	if err != nil {
		_ = snd.Close()
		_ = l.q.Close()
		return nil, err
	}
	l.setInputs(inputs)
	r.publishExt(inputs, snd)
	return l, nil
}

// openQueue opens the loop's queue: the WAL, or memory in NON mode. It
// settles the inputs' ids (r.opts.InputList holds them settled from then
// on) and returns how to open each input.
func (l *loop) openQueue() (map[string]input.OpenOptions, error) {
	r := l.r
	if l.nonMode {
		// No WAL, no positions: every start is a first start.
		l.q = newMemQueue(nonQueueJobs*l.jobs.size, nonQueueBytes, r.now())
		st, err := Settle(r.opts.InputList, Known{File: r.opts.IDs.Input})
		if err != nil {
			_ = l.q.Close()
			return nil, fmt.Errorf("start edge agent: %w", err)
		}
		r.settled(st)
		opens := make(map[string]input.OpenOptions)
		for _, sp := range st.Specs {
			opens[sp.ID] = input.OpenOptions{FirstStart: true}
		}
		return opens, nil
	}
	st, err := r.openWAL()
	if err != nil {
		return nil, err
	}
	st.q.setInputDrop(r.opts.InputList)
	l.q, l.walq = st.q, st.q
	l.resurrect = st.sending
	return st.opens, nil
}

// settled makes st's ids the ones the agent runs with.
func (r *Agent) settled(st Settlement) {
	r.opts.InputList = st.Specs
	r.pub.set(func(p *published) { p.recorded = st.Record })
}

// joinTypes lists input types, each once, in order: status's input type.
func joinTypes(types []string) string {
	var out []string
	for _, t := range types {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return strings.Join(out, ",")
}

// setInputs makes inputs the loop's and waits on their wake-up signals:
// poll when files changed, not after idle-sleep-ms.
func (l *loop) setInputs(inputs []*source) {
	l.in.wakeup.stop()
	l.in.list = inputs
	l.in.wakeup = newWakeMux(inputs)
	ids := sourceIDs(inputs)
	l.r.claims.SetOrder(ids)
	// The inputs' ids joined (one id for one input), for status and logs.
	joined := strings.Join(ids, ",")
	types := make([]string, len(inputs))
	for i, s := range inputs {
		types[i] = s.typ
	}
	typ := joinTypes(types)
	l.r.pub.set(func(p *published) { p.ids.input, p.inputType = joined, typ })
}

// jobSize is the rows per job: at least one poll batch, enough to fill
// the transport's window a few times over, and as many as bulk-max-size,
// so that under load a commit's ack and claim are about the size of the
// group it appends and never cap the group commit. Both parts are capped
// (maxWindowJobSize, maxBulkJobSize): bigger claims and acks cost the WAL
// more than they gain, and claimed payloads are held in memory.
func jobSize(o Options) int {
	return max(o.Queue.PollBatchSize, min(o.Output.Pacing().MaxInFlight*4, maxWindowJobSize),
		min(o.Agent.BulkMaxSize, maxBulkJobSize), 1)
}

// maxWindowJobSize caps what max-in-flight adds to jobSize; maxBulkJobSize
// caps what bulk-max-size adds; maxLinkJobSize caps what a long link adds
// (loop.jobRows).
const (
	maxWindowJobSize = 1024
	maxBulkJobSize   = 4096
	maxLinkJobSize   = 4096
)

func (r *Agent) newSendLoop(snd transport.Sender, enc encoder, nonMode bool) *sendLoop {
	pace := r.opts.Output.Pacing()
	retry := backoff.Policy{Initial: r.opts.Retry.Backoff, Max: r.opts.Retry.BackoffMax}
	if nonMode {
		// retry.* is ignored in NON mode; the output's own backoff
		// bounds the pause after an unreachable engine.
		retry = backoff.Policy{Initial: pace.InitialBackoff, Max: pace.MaxBackoff}
	}
	return &sendLoop{
		snd:        snd,
		enc:        enc,
		logger:     unshipped(r.log),
		now:        r.now,
		retryWait:  retry,
		rejectWait: backoff.Policy{Max: pace.MaxBackoff}, // no Initial: always the maximum
		ctr:        &r.ctr,
		pub:        &r.pub,
		rate:       r.rate,
		capStop:    make(chan struct{}),
		// One part per core the runtime may use: encoding is pure CPU.
		encodeWorkers: runtime.GOMAXPROCS(0),

		tapOn:         func() bool { return r.tap.Active(tap.StageSent) },
		exitOnRefusal: r.exitOnRefusal(),
		inOrder:       r.opts.Agent.Delivery == DeliveryCheckpoint,
	}
}

// exitOnRefusal reads output.on-refusal for the loop and the sender alike.
func (r *Agent) exitOnRefusal() bool {
	return r.opts.Output.Pacing().OnRefusal == output.RefusalExit
}

// publishExt exposes the inputs' and the output's own statistics and
// descriptions when they offer them.
func (r *Agent) publishExt(inputs []*source, snd transport.Sender) {
	e := extStats{inputs: slices.Clone(inputs)}
	if s, ok := snd.(clientStats); ok {
		e.link = s.Stats
	}
	if s, ok := snd.(output.EndpointReporter); ok {
		e.endpoints = s.Endpoints
	}
	if d, ok := snd.(component.Describer); ok {
		e.output = d.Describe
	}
	r.ext.Store(&e)
}
