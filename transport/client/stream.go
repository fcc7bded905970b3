package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"time"

	"github.com/edge-agent/edge-agent/transport"
)

// Feed supplies a streaming call (Client.Stream) with segments of batches
// and takes back their results. Both methods run on the Stream's
// goroutine, between the exchange's reads and writes: they must not
// block.
type Feed interface {
	// Next returns the next segment to send, or nil when none is ready
	// now. A segment's batches go out after those of earlier segments
	// (a resend excepted).
	Next() []transport.Batch
	// Done takes the results of the oldest segment not yet done, one per
	// batch, in order. err is nil while the call goes on; when it stopped
	// early, every segment left is done with the call's error (as Send
	// returns it).
	Done(results []transport.Result, err error)
}

// segment is a part of a streaming call: its batches end at index hi,
// and left of them still lack a final outcome.
type segment struct{ hi, left int }

// errStreamCheckpoint: see Stream.
var errStreamCheckpoint = errors.New("stream: not with checkpoint delivery, whose batches must reach the engine in id order call by call")

// Stream keeps one call open while feed has segments to send: a segment,
// taken once every batch of those before it was written, goes out behind
// the lines still awaiting their replies, in the same window, and its results are handed back (Done) as
// soon as a balanced barrier makes them final, while later segments are
// on the wire. So over a long link the next segment does not wait for the
// round trip of the one before, as it waits between two Send calls.
// Every reply, failure and reconnect is handled as in Send. The call ends
// once nothing is in flight and feed has nothing ready, or early with the
// error Send would return (every segment left is then done with it).
// Checkpoint delivery is not streamed (errStreamCheckpoint): a session's
// first batch must be the lowest the caller holds, which the caller keeps
// only between calls.
func (c *Client) Stream(ctx context.Context, feed Feed) error {
	if c.cfg.Checkpoint {
		return errStreamCheckpoint
	}
	k := &call{feed: feed}
	if !k.pull(&c.stats) && len(k.segs) == 0 {
		return nil
	}
	_, err := c.run(ctx, k)
	return err
}

// pull takes the next segment feed has ready, if it is a Stream's, and
// hands back those that hold no batch to send. It reports whether a batch
// was readied. The caller pulls only once every batch readied before was
// written: the segments not yet taken wait with the feed, where its owner
// can take them back unsent (a stop), not in the call.
func (k *call) pull(stats *counters) bool {
	if k.feed == nil {
		return false
	}
	readied := false
	for !readied {
		b := k.feed.Next()
		if b == nil {
			break
		}
		good := k.add(b, stats)
		k.segs = append(k.segs, segment{hi: len(k.batches), left: good})
		readied = good > 0
	}
	k.deliver()
	return readied
}

// settled counts batch i's outcome as final in its segment.
func (k *call) settled(i int) {
	at := sort.Search(len(k.segs), func(j int) bool { return k.segs[j].hi > i })
	if at < len(k.segs) {
		k.segs[at].left--
	}
}

// deliver hands back, in order, the segments whose outcomes are all
// final, and lets go of their payloads.
func (k *call) deliver() {
	for len(k.segs) > 0 && k.segs[0].left == 0 {
		hi := k.segs[0].hi
		out := slices.Clone(k.results[k.from:hi])
		clear(k.batches[k.from:hi])
		k.from, k.segs = hi, k.segs[1:]
		k.feed.Done(out, nil)
	}
}

// deliverAll hands back every segment left with err: the call stopped.
func (k *call) deliverAll(err error) {
	if k.feed == nil {
		return
	}
	for _, sg := range k.segs {
		out := slices.Clone(k.results[k.from:sg.hi])
		k.from = sg.hi
		k.feed.Done(out, err)
	}
	k.segs = nil
}

// compactAt is the fewest handed-back batches worth moving the rest of a
// streaming call down for: below it the call's slices just grow.
const compactAt = 4096

// settle makes the held outcomes final, hands back the segments they
// complete (with Stats up to date), and, once the segments handed back fill half the call's
// slices, drops them, renumbering every index the call and the pump hold:
// a stream that runs for hours holds only what is still out.
func (p *pumpRun) settle() {
	k := p.k
	k.settleHeld()
	if k.feed == nil {
		return
	}
	p.publish() // the caller sizes what it feeds from the link
	k.deliver()
	n := k.from
	if n < compactAt || 2*n < len(k.batches) {
		return
	}
	k.batches = dropFront(k.batches, n)
	k.results = dropFront(k.results, n)
	k.retries = dropFront(k.retries, n)
	k.lost = dropFront(k.lost, n)
	for j := range k.ready {
		k.ready[j] -= n
	}
	for j := range k.held {
		k.held[j] -= n
	}
	for j := range p.inflight {
		if p.inflight[j].i != barrier {
			p.inflight[j].i -= n
		}
	}
	for j := range k.segs {
		k.segs[j].hi -= n
	}
	k.from = 0
}

// dropFront moves s[n:] to the front and clears what is left behind.
func dropFront[T any](s []T, n int) []T {
	m := copy(s, s[n:])
	clear(s[m:])
	return s[:m]
}

// streamPoll is how long a streaming call waits for a reply before it
// asks its feed again: segments handed over while the call waits for a
// reply go out no later than that, where waiting for the reply would
// leave them until the next one came, a round trip later on a link whose
// replies come in bursts. streamPollWoken replaces it once the feeds'
// owner announces its segments (Wake): the look is then only a backstop,
// and a long link's wait costs no wake-up every few milliseconds.
const (
	streamPoll      = 5 * time.Millisecond
	streamPollWoken = 100 * time.Millisecond
)

// Wake tells a streaming call that its feed has a segment ready: a call
// waiting for a reply looks at the feed at once instead of at its next
// look. Safe from any goroutine; with no streaming call waiting, the next
// wait only returns at once.
func (c *Client) Wake() {
	c.woken.Store(true)
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	c.wake = true
	if c.awaiting != nil {
		_ = c.awaiting.SetReadDeadline(time.Now())
	}
}

// await waits until a reply begins to arrive, at most streamPoll (or
// until Wake); woke reports that none did and the caller may look at its
// feed. The silence deadline (fresh) still ends the wait with an error.
func (p *pumpRun) await() (woke bool, err error) {
	if p.s.r.Buffered() > 0 {
		return false, nil // a reply has begun: its end comes next
	}
	silence := p.deadlineSet.Add(p.c.cfg.ReadTimeout)
	now := time.Now()
	poll := streamPoll
	if p.c.woken.Load() {
		poll = p.c.backstop
	}
	if !now.Add(poll).Before(silence) {
		return false, nil // the silence deadline comes first: read as Send does
	}
	c := p.c
	c.wakeMu.Lock()
	if c.wake {
		c.wake = false
		c.wakeMu.Unlock()
		return true, nil
	}
	_ = p.s.conn.SetReadDeadline(now.Add(poll))
	c.awaiting = p.s.conn
	c.wakeMu.Unlock()
	var fillErr error
	if p.ctx.Err() == nil { // else the AfterFunc may have set a past deadline just before
		fillErr = p.s.r.Fill()
	}
	// Under wakeMu, so that a Wake racing the end of the wait cannot leave
	// its past deadline on the connection; before the context is looked
	// at, so that a cancel's past deadline is never overwritten.
	c.wakeMu.Lock()
	c.awaiting, c.wake = nil, false
	_ = p.s.conn.SetReadDeadline(silence)
	c.wakeMu.Unlock()
	if err := p.ctx.Err(); err != nil {
		return false, err
	}
	var ne net.Error
	switch {
	case fillErr == nil:
		return false, nil
	case errors.As(fillErr, &ne) && ne.Timeout():
		return true, nil
	}
	return false, fmt.Errorf("read reply for %s: %w", p.k.name(p.inflight[0]), eofError(fillErr))
}
