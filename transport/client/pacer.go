package client

import "time"

// Pacing constants; see pacer.
const (
	// queueFullPause is the wait after a QUEUE_FULL while the engine is
	// draining: a few milliseconds of its sink's work, so its queue stays
	// well above empty, instead of the hundreds it asks for.
	queueFullPause = 5 * time.Millisecond
	// paceQuantum is the least sleep a paced sender takes: rows go out in
	// bursts of this much of the rate, not one timer per row.
	paceQuantum = time.Millisecond
	// paceBurst bounds the rows a paced sender may save up while it was
	// not sending, in time at its rate: a sender that stopped between two
	// sends (its own disk, a commit barrier) while the engine drained
	// makes up for them, up to about the queue's worth at the engine's
	// defaults.
	paceBurst = 16 * time.Millisecond
	// paceProbe is how long, in rows granted at the rate, a pacer runs
	// without a QUEUE_FULL before it raises its rate by 1/paceGrowth.
	paceProbe  = 100 * time.Millisecond
	paceGrowth = 16
	// paceHeadroom: the rate is set 1/paceHeadroom above the measured
	// drain, so the queue refills slowly to its mark after a pause.
	paceHeadroom = 32
	// paceFall bounds the fall of the rate per measurement to 1/paceFall.
	paceFall = 8
)

// pacer keeps the engine's queue just under its QUEUE_FULL mark. The
// engine answers QUEUE_FULL exactly when its queue reached the mark, so
// between two QUEUE_FULL episodes the rows it took (RECEIVED) are the
// rows its sink drained: their count over the time between the two is
// the drain rate, measured without knowing the queue's size. After the
// first episode the pacer sends at that rate plus 1/paceHeadroom, after a
// short pause (queueFullPause, not the engine's asked delay) that lets
// the sink take a little off the queue: the queue never empties, and it
// reaches the mark again only slowly, with few lines in flight to be
// refused. A pacer that sent too slowly (no QUEUE_FULL for paceProbe's
// worth of rows) raises its rate, so a low estimate recovers
// geometrically; a measurement lowers it by at most 1/paceFall, since a
// cycle in which the queue ran empty measures less than the drain. An engine that took no row since the previous episode
// (or, at the first episode, since the session began) is not known to be
// draining: the pause is then the delay it asked for.
//
// Before the first QUEUE_FULL nothing is paced. A pacer is per session:
// a new connection learns again. Time is passed in, so the rules are
// tested without a clock. Not safe for concurrent use.
type pacer struct {
	rate   float64   // rows per second; 0: not pacing
	tokens float64   // rows that may go now
	last   time.Time // when tokens were last brought up to date

	epoch    time.Time // start of the current QUEUE_FULL-to-QUEUE_FULL cycle; zero before the first
	epRows   int       // rows RECEIVED in the current cycle (before the first: in the session)
	draining bool      // the engine took rows in the last cycle
	probe    float64   // rows granted since the last QUEUE_FULL or rise
}

// received records a RECEIVED.
func (p *pacer) received() { p.epRows++ }

// queueFull records the start of a QUEUE_FULL episode at now, whose
// reply asked for asked, and returns the pause before sending again.
func (p *pacer) queueFull(now time.Time, asked time.Duration) time.Duration {
	if !p.epoch.IsZero() && p.epRows > 0 {
		if d := now.Sub(p.epoch).Seconds(); d > 0 {
			// A cycle in which the queue ran empty (the sender stalled)
			// measures less than the drain: one cycle lowers the rate by
			// at most 1/paceFall, and a lasting fall shows again and again.
			p.rate = max(float64(p.epRows)/d*(1+1.0/paceHeadroom), p.rate*(1-1.0/paceFall))
		}
	}
	if p.rate > 0 && asked > 0 {
		// Never slower than obeying the engine, which asked for a try
		// per asked at the least: an engine whose QUEUE_FULLs do not
		// follow a queue (a fault, a proxy) would otherwise have the
		// sender's own pauses measured as its drain, cycle after cycle.
		p.rate = max(p.rate, 1/asked.Seconds())
	}
	p.draining = p.epRows > 0
	p.epoch, p.epRows = now, 0
	p.tokens, p.probe = 0, 0
	wait := p.pause(asked)
	p.last = now.Add(wait) // no rows saved up over the pause
	return wait
}

// pause is the wait after a QUEUE_FULL whose reply asked for asked; a
// later reply of the same episode asks it again.
func (p *pacer) pause(asked time.Duration) time.Duration {
	if p.draining {
		return min(asked, queueFullPause)
	}
	return asked
}

// take asks to send one row at now: 0 when it may go (and is counted),
// else how long to wait first.
func (p *pacer) take(now time.Time) time.Duration {
	if p.rate == 0 {
		return 0
	}
	if now.After(p.last) {
		p.tokens = min(p.tokens+p.rate*now.Sub(p.last).Seconds(), max(p.rate*paceBurst.Seconds(), 1))
		p.last = now
	}
	if p.tokens < 1 {
		// Sleep for a quantum's worth of rows, not one row's time.
		need := max(p.rate*paceQuantum.Seconds(), 1) - p.tokens
		return time.Duration(need / p.rate * float64(time.Second))
	}
	p.tokens--
	p.probe++
	if p.probe >= p.rate*paceProbe.Seconds() {
		p.rate *= 1 + 1.0/paceGrowth
		p.probe = 0
	}
	return 0
}
