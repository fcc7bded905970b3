package agent

import (
	"context"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
)

// streamer is an output that keeps one call open while jobs keep coming
// (client.Client.Stream).
type streamer interface {
	Stream(ctx context.Context, feed client.Feed) error
}

// streamWaker is an output whose streaming call can be told that a
// segment is ready (client.Client.Wake).
type streamWaker interface {
	Wake()
}

// announce tells a streaming call that the loop handed jobs over, so
// that it takes them at once rather than at its next look; called from
// the loop's goroutine (Wake is safe from any).
func (s *sendLoop) announce() {
	if w, ok := s.snd.(streamWaker); ok {
		w.Wake()
	}
}

// streams says whether job j starts a stream (sendLoop.stream) rather
// than a Send: only on a long link (its round trip at least
// streamRoundTrip, or its bound above the floor every link has), so that
// a short link keeps its calls as they were; never with
// CHECKPOINT delivery, whose rows must reach the engine in id order call
// by call (keepOrder), nor under a rate cap, which paces each call
// (sendCapped), nor for a settle job, a pause or a hand-back, which do
// handles.
func (s *sendLoop) streams(j *job) (streamer, bool) {
	st, ok := s.snd.(streamer)
	if !ok || j.settle != nil || s.inOrder || s.unordered || s.reclaimed.Load() || s.now().Before(s.holdUntil) {
		return nil, false
	}
	if events, bytes := s.rate.limiters(); events != nil || bytes != nil {
		return nil, false
	}
	rows, rtt := s.link()
	return st, rtt >= streamRoundTrip || rows > client.LinkFloor
}

// streamRoundTrip is the least round trip streamed before the link bound
// has grown past the floor: a round trip idle per call costs more there
// than a job takes to send, while loopback's round trips stay far below.
const streamRoundTrip = 5 * time.Millisecond

// stream sends first and the jobs the loop hands over while it is out in one
// streaming call: a job goes out behind the lines of the jobs before it
// still awaiting replies, and each job's result goes back to the loop as
// soon as its rows have final outcomes, so over a long link the loop
// commits and claims while the link stays busy, where between two Send
// calls it idles a round trip and the loop's commit. A job is taken only
// once every line of those before was written: the jobs behind wait in
// the loop's queue, which a stop takes back unsent (handBack). It returns first
// when the stream did not take it, for do to send.
func (s *sendLoop) stream(ctx context.Context, st streamer, first *encodedJob, jobs <-chan *job, results chan<- *jobResult) *encodedJob {
	f := &streamFeed{s: s, ctx: ctx, jobs: jobs, results: results, first: first}
	_ = st.Stream(ctx, f) // every job taken came back through Done, with the error
	return f.first
}

// streamFeed feeds a streaming call (client.Feed) from the loop's jobs.
type streamFeed struct {
	s       *sendLoop
	ctx     context.Context
	jobs    <-chan *job
	results chan<- *jobResult
	// first is the job that started the stream, until taken; it may be
	// encoded already (the look-ahead's) or gathered from several.
	first *encodedJob
	// out are the jobs taken and not yet done, in order; spare are the
	// arena sets of jobs done, for the next jobs' encoded payloads.
	out   []*streamedJob
	spare []*[]*encodePart
	// ended: no more jobs are taken (the channel closed, a settle job was
	// held, the loop takes its jobs back, or ctx ended).
	ended bool
	// failed: a job came back with the call's error and afterSend took
	// it; the jobs after it get the same pause.
	failed  bool
	retryAt time.Time
}

// streamedJob is a job in a stream: its wire batches, the arena set
// they are in when the stream encoded them, and when it was taken.
type streamedJob struct {
	e     *encodedJob
	set   *[]*encodePart
	start time.Time
}

// Next takes the next job the loop has handed over, if any, and encodes
// it; it never waits for one.
func (f *streamFeed) Next() []transport.Batch {
	s := f.s
	for !f.ended {
		e := f.first
		if e == nil {
			select {
			case next, ok := <-f.jobs:
				if !ok {
					f.ended = true
					return nil
				}
				e = &encodedJob{job: next}
			default:
				return nil
			}
		}
		f.first = nil
		j := e.job
		if j.settle != nil {
			// Nothing queued behind a settle job may overtake it.
			s.held, f.ended = j, true
			return nil
		}
		if s.reclaimed.Load() || f.ctx.Err() != nil {
			f.ended = true
			res := &jobResult{job: j, results: notSent(j, transport.ErrClosed), err: transport.ErrClosed, skipped: true}
			for _, r := range e.split(res) {
				f.results <- r
			}
			return nil
		}
		sj := &streamedJob{e: e}
		if !e.encoded {
			if _, raw := s.enc.(rawEncoder); raw {
				e.batches, e.failed = s.encode(j, nil, 1)
			} else {
				sj.set = f.takeSet()
				e.batches, e.failed = s.encode(j, sj.set, s.encodeWorkers)
				f.release(e)
			}
			e.encoded = true
		}
		if len(e.batches) == 0 {
			// No row could be encoded: its result is known now.
			f.finish(sj, nil, nil)
			continue
		}
		sj.start = s.now()
		s.ctr.sent.Add(uint64(len(e.batches)))
		f.out = append(f.out, sj)
		return e.batches
	}
	return nil
}

// release lets go of the stored payloads of e, encoded now: a stream
// holds up to maxJobs jobs out, and both copies of each would bring the
// heap near the agent's soft memory limit, where the runtime collects
// almost without pause. The loop needs only the rows' ids back (a row
// sent again is read from the queue again; the memory queue keeps its
// own copy); the sent-stage tap, when on, publishes the payloads.
func (f *streamFeed) release(e *encodedJob) {
	if f.s.tapSent() {
		return
	}
	e.job.forgetPayloads()
	for _, p := range e.parts {
		p.forgetPayloads()
	}
}

// takeSet returns an arena set no job out is using.
func (f *streamFeed) takeSet() *[]*encodePart {
	if n := len(f.spare); n > 0 {
		set := f.spare[n-1]
		f.spare = f.spare[:n-1]
		return set
	}
	return new([]*encodePart)
}

// Done hands the oldest job out its results and gives it back to the
// loop.
func (f *streamFeed) Done(sent []transport.Result, err error) {
	sj := f.out[0]
	f.out = f.out[1:]
	f.s.ctr.sendLatency.observe(f.s.now().Sub(sj.start))
	f.finish(sj, sent, err)
}

// finish gives job sj back to the loop with the results of its batches
// sent.
func (f *streamFeed) finish(sj *streamedJob, sent []transport.Result, err error) {
	s, e := f.s, sj.e
	res := &jobResult{job: e.job, err: err}
	res.results = s.merge(e.job, e.batches, sent, e.failed)
	if c, ok := s.snd.(transport.Committer); ok {
		res.watermark = c.Watermark()
	}
	if err != nil && f.failed {
		res.retryAt = f.retryAt
	} else {
		s.afterSend(f.ctx, res)
		f.failed, f.retryAt = err != nil, res.retryAt
	}
	if sj.set != nil {
		f.spare = append(f.spare, sj.set)
	}
	for _, r := range e.split(res) {
		f.results <- r // results has room for every job out
	}
}
