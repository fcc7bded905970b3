package agent

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// Status is a point-in-time view of a Agent for status commands and
// metrics. Counters are totals since New.
type Status struct {
	AgentID           string
	InputID           string
	OutputID          string
	InputType         string
	OutputType        string
	DeliveryGuarantee string
	// State: starting, running, stopping, stopped.
	State     string
	StartedAt time.Time // zero until ready

	EventsRead   uint64 // events returned by the input, position-only ones excluded
	RowsAppended uint64 // rows written to the queue
	Sent         uint64 // rows handed to the transport (each resend counts)
	Acked        uint64 // rows the engine RECEIVED
	Failed       uint64 // rows the engine refused or left unanswered (attempt charged)
	Released     uint64 // rows that never reached the engine or were refused for our settings (no attempt charged)
	Dead         uint64 // rows moved to DEAD (BEST_EFFORT)
	Dropped      uint64 // rows dropped after a failure (NON)
	Retries      uint64 // rows sent again after an earlier charged attempt
	SendErrors   uint64 // Send calls that stopped early (engine unavailable, rejected, refusing our token or key, …)
	Reconnects   uint64 // from the transport when it reports it
	// Window is the EdgeSocket session's congestion window (batch lines
	// that may await replies) after the last send; 0 when the transport
	// keeps none.
	Window  int
	Commits uint64 // queue transactions committed (one fsync each for the WAL)

	// SendThrottled is how long the sender waited for the rate cap
	// (output.rate-limit) before sending.
	SendThrottled time.Duration
	// RateLimit is the send-rate cap in force.
	RateLimit RateLimitStatus

	// SendLatency is the duration of each Send call (one job: up to
	// agent.bulk-max-size batches, until every result is in).
	SendLatency Histogram
	// FsyncLatency is the disk time of each WAL commit with queue.fsync
	// on: its page writes and fdatasyncs (wal.WAL.CommitDiskTime).
	FsyncLatency Histogram
	// LastTurn is when the scheduler loop last began a turn; a loop that
	// stopped turning leaves it behind (health checks compare it with now).
	LastTurn time.Time

	Queue        QueueStatus
	Backpressure bool // input reading paused: queue above queue.max-bytes
	// Drops are the unsent rows the WAL's bounds deleted.
	Drops DropStatus
	// Connection is what the last Send found: idle (none yet), connected,
	// unavailable, rejected (another collector holds the ingress),
	// auth_failed or decrypt_failed (the engine refuses output.token or
	// the key: nothing is delivered until an operator fixes it).
	Connection string
	// Endpoints lists each endpoint of output.endpoints, in list order:
	// its state, whether it is sent to now, rows sent and received, its
	// last error. Nil with a single endpoint.
	Endpoints   []output.EndpointStatus
	LastError   string
	LastErrorAt time.Time
	// WALError is why the last queue transaction failed; empty once one
	// commits again (the WAL is writable).
	WALError string
	// CheckpointStall says why CHECKPOINT delivery is degraded: rows wait
	// for an engine checkpoint that does not come. Empty otherwise.
	CheckpointStall string
	// ConfigHash is the hash of the config in force (Options.ConfigHash,
	// then that of the last reload applied).
	ConfigHash string
	// ConfigReloads counts reloads: OK applied, Failed rejected (invalid
	// file, or an input or output that could not be built).
	ConfigReloads ReloadCounts
	// Input holds the figures of every input summed (component.Sum), when
	// any describes itself; nil otherwise.
	Input *component.Description
	// Files lists the files every input tracks, in input order; nil when
	// none reads files.
	Files []component.FileStatus
	// Inputs is each input on its own, in config order (one for the
	// single `input:` form).
	Inputs []InputStatus
	// Output is what the output's sender describes of itself
	// (component.Describer); the zero Description when it says nothing.
	Output component.Description
}

// RateLimitStatus is output.rate-limit in force (the zero RateLimit: no
// cap) and how long the backlog takes at it.
type RateLimitStatus struct {
	output.RateLimit
	// EventBurst and ByteBurst are the buckets' sizes (0: not capped).
	EventBurst, ByteBurst int
	// BacklogETA is how long the queued rows (Queue: PENDING and SENDING,
	// SizeBytes) take to go out at the cap, if the link keeps up; 0
	// without a cap. The queue counts stored bytes, the cap wire bytes: in
	// PACKET mode a byte cap's ETA is an estimate.
	BacklogETA time.Duration
}

// ReloadCounts are config reloads by outcome.
type ReloadCounts struct{ OK, Failed uint64 }

// QueueStatus is the queue as of the last loop transaction.
type QueueStatus struct {
	Pending, Sending, Acked, Dead int64
	// Received: rows the engine RECEIVED that no checkpoint covers yet
	// (CHECKPOINT delivery); they count toward queue.max-bytes.
	Received     int64
	PayloadBytes int64
	// SizeBytes is the figure compared with queue.max-bytes: the payload
	// bytes queued (WAL) or held (NON).
	SizeBytes int64
	// FileBytes is the WAL file's size; bbolt never shrinks it.
	FileBytes        int64
	OldestPendingAge time.Duration
	// Lanes is the backlog of each priority lane, highest first
	// (queue.lanes or newest-first draining); nil otherwise.
	Lanes []LaneStatus
	// Commit is what WAL commits cost and the group size that follows.
	Commit CommitEstimate
}

// CommitEstimate is what WAL commits cost, as the commit group is sized
// from it (queue.fsync-share); zero in NON mode.
type CommitEstimate struct {
	// Disk is the moving estimate of one commit's disk time (page writes
	// and fdatasyncs); 0 until a commit was measured.
	Disk time.Duration
	// PerRow is the moving estimate of the loop's time per row under
	// load, disk time excluded; 0 until measured.
	PerRow time.Duration
	// GroupCeiling is the most events a commit group may grow to now.
	GroupCeiling int
}

// counters are written by the loop and the sender, read by Snapshot.
type counters struct {
	eventsRead, rowsAppended, sent, acked, failed, released atomic.Uint64
	received                                                atomic.Uint64
	dead, dropped, retries, sendErrors, commits             atomic.Uint64
	lastTurn                                                atomic.Int64 // unix nanoseconds
	sendLatency                                             histogram
	fsync                                                   histogram
	reloadsOK, reloadsFailed                                atomic.Uint64
	// throttled is how long the sender waited for the rate cap, in
	// nanoseconds.
	throttled atomic.Int64
}

// published is the part of Status that is not a counter.
type published struct {
	mu           sync.Mutex
	state        string
	startedAt    time.Time
	queue        QueueStatus
	oldest       time.Time
	backpressure bool
	drops        DropStatus
	connection   string
	lastErr      string
	lastErrAt    time.Time
	walErr       string
	commit       CommitEstimate
	// checkpointStall is why CHECKPOINT delivery is degraded, if it is.
	checkpointStall string
	ids             resolvedIDs
	// recorded is Settlement.Record of the start.
	recorded string
	// What a reload may change.
	inputType, outputType, configHash string
}

type resolvedIDs struct{ agent, input, output string }

func (p *published) set(f func(p *published)) {
	p.mu.Lock()
	f(p)
	p.mu.Unlock()
}

func (p *published) setError(err error, at time.Time) {
	if err == nil {
		return
	}
	p.set(func(p *published) { p.lastErr, p.lastErrAt = err.Error(), at })
}

// RecordedInputID is the id settled at start for the input that may leave
// its id out (Settlement.Record), which the identity file should hold; ""
// before start or when no input may. Safe from any goroutine.
func (r *Agent) RecordedInputID() string {
	r.pub.mu.Lock()
	defer r.pub.mu.Unlock()
	return r.pub.recorded
}

// Snapshot returns the current status. It is safe from any goroutine.
func (r *Agent) Snapshot() Status {
	st := Status{
		DeliveryGuarantee: r.delivery,
		EventsRead:        r.ctr.eventsRead.Load(),
		RowsAppended:      r.ctr.rowsAppended.Load(),
		Sent:              r.ctr.sent.Load(),
		Acked:             r.ctr.acked.Load(),
		Failed:            r.ctr.failed.Load(),
		Released:          r.ctr.released.Load(),
		Dead:              r.ctr.dead.Load(),
		Dropped:           r.ctr.dropped.Load(),
		Retries:           r.ctr.retries.Load(),
		SendErrors:        r.ctr.sendErrors.Load(),
		Commits:           r.ctr.commits.Load(),
		SendLatency:       r.ctr.sendLatency.snapshot(),
		FsyncLatency:      r.ctr.fsync.snapshot(),
		SendThrottled:     time.Duration(r.ctr.throttled.Load()),
		ConfigReloads:     ReloadCounts{OK: r.ctr.reloadsOK.Load(), Failed: r.ctr.reloadsFailed.Load()},
	}
	if t := r.ctr.lastTurn.Load(); t != 0 {
		st.LastTurn = time.Unix(0, t)
	}
	p := &r.pub
	p.mu.Lock()
	st.AgentID, st.InputID, st.OutputID = p.ids.agent, p.ids.input, p.ids.output
	st.State, st.StartedAt = p.state, p.startedAt
	st.InputType, st.OutputType, st.ConfigHash = p.inputType, p.outputType, p.configHash
	st.Queue, st.Backpressure, st.Drops = p.queue, p.backpressure, p.drops
	st.Queue.Commit = p.commit
	st.Connection, st.LastError, st.LastErrorAt = p.connection, p.lastErr, p.lastErrAt
	st.WALError = p.walErr
	st.CheckpointStall = p.checkpointStall
	oldest := p.oldest
	p.mu.Unlock()
	if !oldest.IsZero() {
		st.Queue.OldestPendingAge = max(0, r.now().Sub(oldest))
	}
	rl := r.rate.config()
	st.RateLimit = RateLimitStatus{RateLimit: rl, EventBurst: rl.EventBurst(), ByteBurst: rl.ByteBurst(),
		BacklogETA: rl.TimeToSend(st.Queue.Pending+st.Queue.Sending, st.Queue.SizeBytes)}
	if e := r.ext.Load(); e != nil {
		if e.link != nil {
			ls := e.link()
			st.Reconnects, st.Window = ls.Reconnects, ls.Window
		}
		if e.endpoints != nil {
			st.Endpoints = e.endpoints()
		}
		if e.output != nil {
			st.Output = e.output()
		}
		st.Inputs = inputStatuses(e.inputs)
		ds := make([]component.Description, 0, len(st.Inputs))
		for _, in := range st.Inputs {
			if in.Values != nil {
				ds = append(ds, in.Description)
			}
			st.Files = append(st.Files, in.Files...)
		}
		if len(ds) > 0 {
			sum := component.Sum(ds...)
			st.Input = &sum
		}
	}
	return st
}
