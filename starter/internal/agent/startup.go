package agent

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// Jobs handed to the sender at once: one in Send and the rest ready
// behind it, so the connection never waits for the loop's next
// transaction. Two groups' worth (groupJobs each): while the input stays
// full, claims happen only at commits, one per group read, so a commit
// must be able to hand out the whole group it appends while the jobs of
// the group before are still out. Then the sender keeps pace with the
// reading (run-peers: acknowledged within ~10k rows of what was read,
// instead of 60 % of it with one group's worth), the rows a claim takes
// are still in the WAL's decoded-block cache, and the s2 decompression
// of claims, ~0.4 CPU-s per 1M lines, is gone. History, run-peers
// medians on a quiet machine (docs/performance.md): two jobs left the
// sender waiting before 28 % of PACKET jobs and 74 % of RAW ones; three
// gave RAW 266-293k lines/s; four (with a read's results committed with
// it, loop.turn) 290-311k at 3.0-3.1 CPU-s and 49 MiB; eight 404-418k at
// 2.4 CPU-s, but PACKET, whose sender cannot keep pace, peaked at 67-68
// MiB with the GC at 200 %, hence process.DefaultGCPercent's 120.
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
		nonMode:       nonMode,
		rowRetry:      newRowRetries(r.opts, 0),
		jobs:          newJobSlots(jobSize(r.opts)),
		claims:        claimPolicy{hint: true},
		cleanup:       cleanupPolicy{off: nonMode},
		markStarted:   true,
		exitOnRefusal: r.exitOnRefusal(),
	}

	opens, err := l.openQueue()
	if err != nil {
		return nil, err
	}
	singleID := l.in.singleID
	if r.wrapQueue != nil {
		l.q = r.wrapQueue(l.q)
	}
	if len(r.opts.InputList) == 0 && singleID == "" {
		_ = l.q.Close()
		return nil, errors.New("start edge agent: no input id (agent.yaml input.id or the edge-agent.id file)")
	}
	l.group = newGrouping(r.opts, l.jobs.size, l.walq != nil)
	specs := r.opts.specs(singleID)

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
// settles the single input's id and returns how to open each input.
func (l *loop) openQueue() (map[string]input.OpenOptions, error) {
	r := l.r
	if l.nonMode {
		// No WAL, no positions: every start is a first start.
		l.q = newMemQueue(nonQueueJobs*l.jobs.size, nonQueueBytes, r.now())
		l.in.singleID = r.opts.IDs.Input
		opens := make(map[string]input.OpenOptions)
		for _, sp := range r.opts.specs(l.in.singleID) {
			opens[sp.ID] = input.OpenOptions{FirstStart: true}
		}
		return opens, nil
	}
	st, err := r.openWAL()
	if err != nil {
		return nil, err
	}
	l.q, l.walq, l.in.singleID = st.q, st.q, st.inputID
	l.resurrect = st.sending
	return st.opens, nil
}

// setInputs makes inputs the loop's and waits on their wake-up signals:
// poll when files changed, not after idle-sleep-ms.
func (l *loop) setInputs(inputs []*source) {
	l.in.wakeup.stop()
	l.in.list = inputs
	l.in.wakeup = newWakeMux(inputs)
	ids := sourceIDs(inputs)
	l.r.claims.SetOrder(ids)
	// The single input's id, or the list's ids joined, for status and logs.
	joined := strings.Join(ids, ",")
	var types []string
	for _, s := range inputs {
		if !slices.Contains(types, s.typ) {
			types = append(types, s.typ)
		}
	}
	typ := strings.Join(types, ",")
	l.r.pub.set(func(p *published) { p.ids.input, p.inputType = joined, typ })
}

// jobSize is the rows per job: enough to fill the transport's pipeline a
// few times over, at least one poll batch, and at least bulk-max-size. A
// commit under load acks the rows of the job that came back and claims a
// new one while it appends a full buffer: with jobs as big as that buffer
// the three are about the same size, so claims and acks never cap the
// group commit (with 256-row jobs and a 1,024-event buffer, three commits
// in four carried only a job's ack and claim, each paying its fsync).
// The max-in-flight part lets a job fill the transport's window on a long
// round trip; it is capped at maxWindowJobSize, which covers the default
// window (1024 lines), because bigger claims and acks cost the WAL more
// than they gain: with 4096-row jobs a 500,000-row backlog drained at
// about 60 % of the rate of 1024-row jobs and wrote 1.4-2.3x the bytes
// (docs/performance.md). The bulk-max-size part is capped too: claimed
// payloads are held in memory (maxJobs jobs), and beyond a few thousand
// rows a bigger group gains little over the fsync it amortises.
func jobSize(o Options) int {
	return max(o.Queue.PollBatchSize, min(o.Output.Pacing().MaxInFlight*4, maxWindowJobSize),
		min(o.Agent.BulkMaxSize, maxBulkJobSize), 1)
}

// maxWindowJobSize caps what max-in-flight adds to jobSize; maxBulkJobSize
// caps what bulk-max-size adds.
const (
	maxWindowJobSize = 1024
	maxBulkJobSize   = 4096
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
		logger:     r.log,
		now:        r.now,
		retryWait:  retry,
		rejectWait: backoff.Policy{Max: pace.MaxBackoff}, // no Initial: always the maximum
		ctr:        &r.ctr,
		pub:        &r.pub,
		// One part per core the runtime may use: encoding is pure CPU.
		encodeWorkers: runtime.GOMAXPROCS(0),

		exitOnRefusal: r.exitOnRefusal(),
	}
}

// exitOnRefusal reads output.on-refusal for the loop and the sender alike.
func (r *Agent) exitOnRefusal() bool {
	return r.opts.Output.Pacing().OnRefusal == output.RefusalExit
}

// publishExt exposes the inputs' and the transport's own statistics when
// they offer them.
func (r *Agent) publishExt(inputs []*source, snd transport.Sender) {
	e := extStats{inputs: slices.Clone(inputs)}
	if s, ok := snd.(clientStats); ok {
		e.reconnects = func() uint64 { return s.Stats().Reconnects }
	}
	r.ext.Store(&e)
}
