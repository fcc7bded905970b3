package agent

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// encoder turns a stored RAW payload into its wire form (RAW or PACKET).
// codec.Encoder satisfies it.
type encoder interface {
	Encode(dst, raw []byte) ([]byte, error)
}

// job is a set of claimed rows handed from the loop to the sender.
type job struct {
	seq  uint64
	rows []row
	// settle, when set, makes this a settle or poll job (no rows).
	settle *settleReq
}

// forgetPayloads drops the job's references to its payloads once its
// result is in: the commit that applies the result needs only the ids,
// and a WAL row's payload aliases its whole decoded block, which would
// otherwise stay in memory until that commit (and the jobs already
// claimed behind it hold blocks of their own).
func (j *job) forgetPayloads() {
	for i := range j.rows {
		j.rows[i].Payload = nil
	}
}

// jobResult is what became of a job. results[i] belongs to job.rows[i].
type jobResult struct {
	job     *job
	results []transport.Result
	// err is the error Send returned (why it stopped early), if any.
	err error
	// retryAt, when set, is the earliest time the loop may hand over the
	// next job: the engine was unreachable or rejected us.
	retryAt time.Time
	// skipped: the sender was pausing and did not call Send at all.
	skipped bool
	// watermark is the highest checkpoint watermark the engine answered
	// so far (transport.Committer), 0 if none.
	watermark int64
	// answers and resent are a settle job's: the engine's answer about
	// each id asked, and the outcome of each batch sent again.
	answers []transport.CommitResult
	resent  []transport.Result
}

// sendLoop is the sender goroutine. It owns the transport.Sender and the
// connection-level backoff: after ErrUnavailable it waits the retry
// backoff (retry.backoff-ms·2^n, capped at retry.backoff-max-ms), after
// ErrRejected, and after ErrAuthFailed or ErrDecryptFailed unless
// output.on-refusal is exit, the maximum backoff (output.max-backoff-ms):
// neither a busy ingress nor one refusing our settings sees a storm.
type sendLoop struct {
	snd        transport.Sender
	enc        encoder
	logger     *slog.Logger
	now        func() time.Time
	retryWait  backoff.Policy
	rejectWait backoff.Policy
	ctr        *counters
	pub        *published
	// exitOnRefusal: output.on-refusal is exit; the loop stops the agent,
	// so a refusal sets no pause.
	exitOnRefusal bool

	streak    int       // consecutive Send calls that stopped on a connection error
	holdUntil time.Time // no Send before this
	holdErr   error
	// encodeWorkers is how many parts a job's payloads are encoded in at
	// once (PACKET). sets are two sets of parts, reused from job to job:
	// one for the job in Send, one for the job encoded ahead of it.
	encodeWorkers int
	sets          [2][]*encodePart
	// reclaimed: the loop is taking its queued jobs back (handBack); set
	// from the loop's goroutine, cleared by startSender.
	reclaimed atomic.Bool
	// rate is output.rate-limit, the agent's (every sender loop shares
	// it). capStop, closed once by stopPacing, ends a wait for its tokens:
	// the loop is stopping or reloading, and the rows waiting go back
	// unsent instead of holding the loop up.
	rate     *sendCap
	capStop  chan struct{}
	stopOnce sync.Once
	// held is a settle job gather took from the queue behind the jobs it
	// joined: the next one to run. Written by gather (on the sender's
	// goroutine or the look-ahead's, which the sender waits for).
	held *job
	// tapOn reports whether the sent-stage tap publishes payloads (nil:
	// never); a stream keeps the stored payloads of its jobs then.
	tapOn func() bool
	// inOrder: CHECKPOINT delivery, where no batch may reach the engine
	// ahead of a lower id still to be sent (keepOrder). unordered: a job
	// came back with a row not RECEIVED; every row job is handed back
	// (ErrUnsettled) until a settle job succeeds, so that the loop claims
	// again from the lowest row. Only the sender's goroutine uses it.
	inOrder, unordered bool
}

func (s *sendLoop) run(ctx context.Context, jobs <-chan *job, results chan<- *jobResult) {
	var ahead *encodedJob // taken and encoded while the job before it was in Send
	for {
		cur := ahead
		if cur == nil && s.held != nil {
			cur, s.held = &encodedJob{job: s.held}, nil
		}
		if cur != nil && ctx.Err() != nil {
			return // stopSender releases every job not come back
		}
		fresh := cur == nil
		if fresh {
			select {
			case <-ctx.Done():
				return
			case j, ok := <-jobs:
				if !ok {
					return
				}
				cur = &encodedJob{job: j}
			}
		}
		if st, ok := s.streams(cur.job); ok {
			if cur = s.stream(ctx, st, cur, jobs, results); cur == nil {
				continue
			}
		}
		if fresh && cur.parts == nil {
			cur = s.gather(ctx, cur.job, jobs, nil)
		}
		var res *jobResult
		res, ahead = s.do(ctx, cur, jobs)
		// results has room for every outstanding job: never blocks.
		for _, r := range cur.split(res) {
			results <- r
		}
	}
}

// tapSent reports whether the sent-stage tap is on.
func (s *sendLoop) tapSent() bool { return s.tapOn != nil && s.tapOn() }

// link is what the output says of its link: how many rows it could
// keep in flight now (the client's link bound) and its least round trip;
// zeros when it does not say.
func (s *sendLoop) link() (rows int, rtt time.Duration) {
	if c, ok := s.snd.(clientStats); ok {
		st := c.Stats()
		return st.LinkBound, st.RoundTrip
	}
	return 0, 0
}

// linkRows is the link's row bound (see link).
func (s *sendLoop) linkRows() int {
	rows, _ := s.link()
	return rows
}

// Gathering waits: see gather.
const (
	gatherWaitShare = 4                      // of the link's round trip
	gatherWaitMax   = 250 * time.Millisecond // whatever the round trip
)

// gather joins to j the row jobs queued behind it while their rows stay
// below what the link can keep in flight: a Send ends only when every
// batch of it is answered, so on a long link each call leaves the link
// idle for a round trip, and one call must carry a round trip's worth of
// rows or more. When the queue runs dry first it waits for more, at most
// 1/gatherWaitShare of the link's round trip (and gatherWaitMax), or
// until ctx ends or stop closes: the loop is then most likely committing
// the results just handed back and claiming the next rows, and that wait
// costs less than the round trip a short call wastes. On a short link the
// bound is no more than a job and nothing is joined. A settle job ends
// the gathering and is held to run next.
func (s *sendLoop) gather(ctx context.Context, j *job, jobs <-chan *job, stop <-chan struct{}) *encodedJob {
	e := &encodedJob{job: j}
	if j.settle != nil {
		return e
	}
	limit, rtt := s.link()
	rows := len(j.rows)
	var parts []*job
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for rows < limit && s.held == nil {
		var next *job
		ok := true
		select {
		case next, ok = <-jobs:
		default:
			if rtt <= 0 {
				limit = 0
				continue
			}
			if timer == nil {
				timer = time.NewTimer(min(rtt/gatherWaitShare, gatherWaitMax))
			}
			select {
			case next, ok = <-jobs:
			case <-timer.C:
				limit = 0
				continue
			case <-ctx.Done():
				limit = 0
				continue
			case <-stop:
				limit = 0
				continue
			}
		}
		if !ok {
			limit = 0 // closed: the run loop sees it next
			continue
		}
		if next.settle != nil {
			s.held = next
			break
		}
		if parts == nil {
			parts = []*job{j}
		}
		parts = append(parts, next)
		rows += len(next.rows)
	}
	if parts == nil {
		return e
	}
	all := make([]row, 0, rows)
	for _, p := range parts {
		all = append(all, p.rows...)
	}
	e.job, e.parts = &job{rows: all}, parts
	return e
}

// split hands each job gathered into e its share of res, in order: one
// result per job, as the loop expects.
func (e *encodedJob) split(res *jobResult) []*jobResult {
	if e.parts == nil {
		return []*jobResult{res}
	}
	out := make([]*jobResult, len(e.parts))
	off := 0
	for i, p := range e.parts {
		r := *res
		r.job = p
		r.results = res.results[off : off+len(p.rows) : off+len(p.rows)]
		off += len(p.rows)
		out[i] = &r
	}
	return out
}

// encodedJob is a job taken by the sender, with its wire batches once
// encoded into the arena set (sendLoop.sets) set. When gather joined
// several jobs, job holds their rows in order and parts the jobs.
type encodedJob struct {
	job     *job
	parts   []*job
	encoded bool
	batches []transport.Batch
	failed  map[int]error
	set     int
}

// handBack makes the sender hand back, unsent, every job it has taken but
// not begun to Send: the loop takes its queued jobs back to stop
// (reclaimQueued), and the job encoded ahead is one of them.
func (s *sendLoop) handBack() {
	s.reclaimed.Store(true)
	s.stopPacing()
}

// stopPacing makes the sender stop waiting for the rate cap: a job whose
// next batch has no tokens yet comes back with that batch and the rest
// NotSent. Safe from any goroutine, more than once.
func (s *sendLoop) stopPacing() {
	s.stopOnce.Do(func() {
		if s.capStop != nil {
			close(s.capStop)
		}
	})
}

// do sends cur and returns its result, and the next job if it was taken
// and encoded during the Send.
func (s *sendLoop) do(ctx context.Context, cur *encodedJob, jobs <-chan *job) (*jobResult, *encodedJob) {
	j := cur.job
	res := &jobResult{job: j}
	if now := s.now(); now.Before(s.holdUntil) {
		// A job queued before the loop learnt about the pause: hand it back
		// untouched instead of knocking on the engine again.
		res.results = notSent(j, s.holdErr)
		res.err, res.retryAt, res.skipped = s.holdErr, s.holdUntil, true
		return res, nil
	}
	if s.reclaimed.Load() {
		res.results = notSent(j, transport.ErrClosed)
		res.err, res.skipped = transport.ErrClosed, true
		return res, nil
	}
	if j.settle != nil {
		s.settle(ctx, res)
		return res, nil
	}
	if s.unordered {
		// A lower row of an earlier job goes again first: nothing above
		// it may go before.
		res.results = notSent(j, transport.ErrUnsettled)
		res.err, res.skipped = transport.ErrUnsettled, true
		return res, nil
	}
	if !cur.encoded {
		cur.batches, cur.failed = s.encode(j, &s.sets[cur.set], s.encodeWorkers)
	}
	var ahead *encodedJob
	var sent []transport.Result
	var err error
	cut := false
	if len(cur.batches) > 0 {
		next := s.encodeAhead(ctx, jobs, 1-cur.set)
		sent, cut, err = s.sendCapped(ctx, cur.batches)
		ahead = next()
	}
	res.results = s.merge(j, cur.batches, sent, cur.failed)
	res.err = err
	if s.inOrder && keepOrder(res.results) && err == nil {
		// The session lives on: the jobs queued behind must not pass
		// the rows that go back. (A Send that failed left no session; a
		// new one refuses batches until settled.)
		s.unordered = true
	}
	if c, ok := s.snd.(transport.Committer); ok {
		res.watermark = c.Watermark()
	}
	if cut && len(sent) == 0 {
		// Nothing of it went: like a job handed back.
		res.err, res.skipped = transport.ErrClosed, true
		return res, ahead
	}
	s.afterSend(ctx, res)
	return res, ahead
}

// sendCapped sends batches in order under the rate cap (sendCap.take):
// each run once the cap holds the tokens of its first batch, with as many
// following batches as the cap holds at once. Without a cap that is one
// Send of every batch. It returns the results of the batches sent; cut:
// it stopped waiting for tokens (stopPacing) and left the rest unsent.
func (s *sendLoop) sendCapped(ctx context.Context, batches []transport.Batch) (sent []transport.Result, cut bool, err error) {
	for len(batches) > 0 {
		n, waited := s.rate.take(ctx, s.capStop, s.now, batches)
		if waited > 0 {
			s.ctr.throttled.Add(int64(waited))
		}
		if n == 0 {
			if err := ctx.Err(); err != nil {
				return sent, false, err
			}
			return sent, true, nil
		}
		s.ctr.sent.Add(uint64(n))
		start := s.now()
		got, err := s.snd.Send(ctx, batches[:n])
		s.ctr.sendLatency.observe(s.now().Sub(start))
		if len(batches) == n && len(sent) == 0 {
			return got, false, err // the whole job in one Send: no copy
		}
		sent = append(sent, got[:min(n, len(got))]...)
		if err != nil || len(got) < n {
			return sent, false, err
		}
		batches = batches[n:]
	}
	return sent, false, nil
}

// encodeAhead takes the next job, if the loop hands one over before the
// Send now beginning returns, and encodes it into the arena set set
// meanwhile: encoding a PACKET job costs about as long as sending it, and
// the wire would otherwise wait for it after every job. Only one job is
// taken ahead, into the set the Send is not reading, so memory stays
// bounded by two jobs' encoded payloads and no payload the client may
// still resend is overwritten. It encodes on one core fewer than a job
// encoded while nothing is in Send: the Send's own goroutine must not
// wait for a core to read replies and write lines, or the wire would
// idle while the next job is encoded, as before. The returned func ends
// the look-ahead and waits for it: it must be called once the Send has
// returned, and is what keeps the goroutine from outliving the sender.
// RAW needs no look-ahead: its batches are the stored payloads.
func (s *sendLoop) encodeAhead(ctx context.Context, jobs <-chan *job, set int) func() *encodedJob {
	if _, raw := s.enc.(rawEncoder); raw || s.held != nil {
		// A held settle job comes next: nothing queued behind it may
		// overtake it.
		return func() *encodedJob { return nil }
	}
	sendDone := make(chan struct{})
	got := make(chan *encodedJob, 1)
	go func() {
		select {
		case j, ok := <-jobs:
			if !ok {
				got <- nil
				return
			}
			e := s.gather(ctx, j, jobs, sendDone)
			e.encoded, e.set = true, set
			e.batches, e.failed = s.encode(e.job, &s.sets[set], max(1, s.encodeWorkers-1))
			got <- e
		case <-sendDone:
			got <- nil
		case <-ctx.Done():
			got <- nil
		}
	}()
	return func() *encodedJob {
		close(sendDone)
		return <-got
	}
}

// encode builds the wire batches, in the job's order, into the arenas of
// set, in at most workers parts. A row whose payload cannot be encoded is
// reported Failed (an attempt is charged, so it ends DEAD, not in a loop).
//
// PACKET encoding (compression, a random IV, AES-GCM) costs microseconds
// per event, more than everything else the agent does for it: the job is
// cut into contiguous parts encoded at once, one per core, each into its
// own reused arena. The parts are joined in row order, so batch ids reach
// the wire in order, and memory stays bounded by the job (a set's arenas
// hold one job's encoded payloads).
func (s *sendLoop) encode(j *job, set *[]*encodePart, workers int) ([]transport.Batch, map[int]error) {
	if _, raw := s.enc.(rawEncoder); raw {
		// RAW sends the stored bytes as they are: no copy.
		batches := make([]transport.Batch, len(j.rows))
		for i, r := range j.rows {
			batches[i] = transport.Batch{ID: r.BatchID, Payload: r.Payload}
		}
		return batches, nil
	}
	n := len(j.rows)
	parts := max(1, min(workers, n/minEncodePart))
	for len(*set) < parts {
		*set = append(*set, &encodePart{})
	}
	used := (*set)[:parts]
	per := (n + parts - 1) / parts
	var wg sync.WaitGroup
	for p, part := range used {
		lo, hi := min(p*per, n), min((p+1)*per, n)
		if p == parts-1 {
			part.run(s.enc, j.rows, lo, hi) // this goroutine takes the last part
			continue
		}
		wg.Go(func() { part.run(s.enc, j.rows, lo, hi) })
	}
	wg.Wait()
	batches := make([]transport.Batch, 0, n)
	var failed map[int]error
	for _, part := range used {
		for k, i := range part.idx {
			// Slices are cut only now: the arena may have moved while growing.
			from, to := part.offs[2*k], part.offs[2*k+1]
			batches = append(batches, transport.Batch{ID: j.rows[i].BatchID, Payload: part.arena[from:to:to]})
		}
		for i, err := range part.failed {
			if failed == nil {
				failed = make(map[int]error)
			}
			failed[i] = err
		}
	}
	return batches, failed
}

// minEncodePart is the fewest rows worth a goroutine of their own: below
// it, starting and joining one costs more than the encoding it spreads.
const minEncodePart = 64

// encodePart is one contiguous part of a job being encoded, and the arena
// its payloads are written to, reused from job to job.
type encodePart struct {
	arena  []byte
	offs   []int // start, end of each encoded payload in arena
	idx    []int // the job's row index of each encoded payload
	failed map[int]error
}

func (p *encodePart) run(enc encoder, rows []row, lo, hi int) {
	p.arena, p.offs, p.idx, p.failed = p.arena[:0], p.offs[:0], p.idx[:0], nil
	for i := lo; i < hi; i++ {
		start := len(p.arena)
		out, err := enc.Encode(p.arena, rows[i].Payload)
		if err != nil {
			if p.failed == nil {
				p.failed = make(map[int]error)
			}
			p.failed[i] = err
			continue
		}
		p.arena = out
		p.offs = append(p.offs, start, len(p.arena))
		p.idx = append(p.idx, i)
	}
}

// merge lines the Sender's results up with the job's rows. Missing results
// (a Sender that stopped early) count as NotSent.
func (s *sendLoop) merge(j *job, batches []transport.Batch, sent []transport.Result, encFailed map[int]error) []transport.Result {
	out := make([]transport.Result, len(j.rows))
	k := 0
	for i, r := range j.rows {
		if err, bad := encFailed[i]; bad {
			out[i] = transport.Result{ID: r.BatchID, Outcome: transport.Failed, Err: err}
			continue
		}
		if k < len(sent) && k < len(batches) {
			out[i] = sent[k]
		} else {
			out[i] = transport.Result{ID: r.BatchID, Outcome: transport.NotSent}
		}
		out[i].ID = r.BatchID
		k++
	}
	return out
}

func (s *sendLoop) afterSend(ctx context.Context, res *jobResult) {
	err := res.err
	switch {
	case err == nil:
		s.streak, s.holdErr = 0, nil
		s.pub.set(func(p *published) { p.connection = "connected" })
	case ctx.Err() != nil, errors.Is(err, transport.ErrClosed):
		// Shutting down: the loop releases what was not sent.
	case errors.Is(err, transport.ErrUnsettled):
		// A new session: the loop settles it next. Not an outage.
		s.streak, s.holdErr = 0, nil
	case isRefusal(err) && s.exitOnRefusal:
		state := output.ConnectionState(err)
		s.pub.set(func(p *published) { p.connection = state })
	case isRejected(err), isRefusal(err):
		// The engine turned us away, not the rows: only a change on one
		// side ends it, so ask again only at the maximum backoff.
		s.ctr.sendErrors.Add(1)
		s.holdErr = err
		s.holdUntil = s.now().Add(s.rejectWait.Jittered(0))
		res.retryAt = s.holdUntil
		state := output.ConnectionState(err)
		s.pub.set(func(p *published) { p.connection = state })
	default:
		// ErrUnavailable, or anything unexpected: both mean "try later".
		s.ctr.sendErrors.Add(1)
		s.holdErr = err
		s.holdUntil = s.now().Add(s.retryWait.Jittered(s.streak))
		s.streak++
		res.retryAt = s.holdUntil
		s.pub.set(func(p *published) { p.connection = "unavailable" })
	}
}

func notSent(j *job, err error) []transport.Result {
	out := make([]transport.Result, len(j.rows))
	for i, r := range j.rows {
		out[i] = transport.Result{ID: r.BatchID, Outcome: transport.NotSent, Err: err}
	}
	return out
}

// rawEncoder passes the stored payload through (RAW mode).
type rawEncoder struct{}

func (rawEncoder) Encode(dst, raw []byte) ([]byte, error) { return append(dst, raw...), nil }

// settle runs a settle or poll job (checkpoint.go): the engine is asked
// about the ids, and the rows of those it lost are read from the WAL,
// encoded and sent again by the Committer, lowest first.
func (s *sendLoop) settle(ctx context.Context, res *jobResult) {
	c, ok := s.snd.(transport.Committer)
	if !ok {
		res.err = errors.New("settle: the output cannot be asked about checkpoints")
		return
	}
	req := res.job.settle
	resend := func(id int64) (transport.Batch, bool) {
		rid, ok := req.rowOf[id]
		if !ok {
			return transport.Batch{}, false
		}
		payload, ok, err := req.read(rid)
		if err != nil || !ok {
			s.logger.Error("cannot read a row the engine lost, to send it again; it is asked about at the next settle",
				slog.Uint64("row_id", rid), slog.Int64("batch_id", id), slog.Any(keyError, err))
			return transport.Batch{}, false
		}
		wire, err := s.enc.Encode(nil, payload)
		if err != nil {
			s.logger.Error("cannot encode a row the engine lost, to send it again", slog.Uint64("row_id", rid), slog.Any(keyError, err))
			return transport.Batch{}, false
		}
		return transport.Batch{ID: id, Payload: wire}, true
	}
	if req.poll {
		var a transport.CommitResult
		if a, res.err = c.Poll(ctx, req.ids[0]); res.err == nil {
			res.answers = []transport.CommitResult{a}
		}
	} else {
		res.answers, res.resent, res.err = c.Settle(ctx, req.ids, resend)
	}
	if res.err == nil && !req.poll {
		s.unordered = false
	}
	res.watermark = c.Watermark()
	s.afterSend(ctx, res)
}

// errOvertook is why keepOrder takes a RECEIVED row back.
var errOvertook = errors.New("received after a lower batch id that was not: sent again after it")

// keepOrder keeps CHECKPOINT delivery in batch id order: a job started
// afresh takes the first id it receives as its floor and ACKs every
// lower id without a checkpoint, so the first batch of every session
// must be the lowest the agent still holds, and the rows held as
// received must all lie below those still to be sent. A row RECEIVED
// after one of the same Send that was not goes back NotSent, to go again
// after it (a duplicate, never a loss). results are in batch id order;
// it reports whether any row was not RECEIVED.
func keepOrder(results []transport.Result) (gap bool) {
	for i := range results {
		switch {
		case results[i].Outcome != transport.Received:
			gap = true
		case gap:
			results[i] = transport.Result{ID: results[i].ID, Outcome: transport.NotSent, Err: errOvertook}
		}
	}
	return gap
}
