package client

import (
	"math"
	"time"
)

// LinkFloor is the least Stats.LinkBound reports: a link bound above it
// was measured on a link long enough to need more in flight.
const LinkFloor = 1024

// Window constants; see window.
const (
	// initialWindow is how many batch lines a new session may have
	// awaiting replies before any reply came back: the window this client
	// always had, so a short link behaves as before from the first line.
	initialWindow = 64
	// linkFloor is the least the link bound allows: the fixed window this
	// client had before it measured links, so a short link, whose round
	// trips are too short to measure well, keeps what it had.
	linkFloor = LinkFloor
	// linkGain is how many bandwidth-delay products may be in flight: a
	// window that fills the link measures a rate that lets it grow again,
	// so growth stops only where the rate stops rising with it.
	linkGain = 2
	// linkRounds is how many measured round trips the link's rate
	// estimate lives: a link that slowed is known again within twice
	// that many.
	linkRounds = 16
)

// window is a session's congestion window: how many batch lines may await
// replies at once. One __BATCH__ carries one event, so on a long link the
// window, not the bandwidth, sets the rate (window / round-trip time).
//
// It grows like TCP's: by one line per RECEIVED while it was the limit
// (lines were waiting for room), doubling per round trip up to the
// threshold and by one line per round trip beyond it; QUEUE_FULL (the
// engine's queue is past its backpressure mark) and RETRY (it is full)
// halve it and set the threshold there, once per episode (the replies to
// lines already written when it was cut say the same thing again).
//
// Past linkFloor and below the threshold it takes the link bound at once
// when it is the limit. It never grows past the link bound: linkGain times the link's
// bandwidth-delay product, the highest rate of RECEIVED measured over one
// round trip (of the last linkRounds or more) times the least round trip
// of the session, and never below linkFloor. One line per round trip is
// timed, the newest on the wire when the pump waits for replies: the
// replies up to its own are a round trip's worth. The clock is read twice
// per round trip, not per line. Config's MaxInFlight caps both: 1 keeps the Java agent's
// one-at-a-time exchange. Time is passed in; not safe for concurrent use.
type window struct {
	size      int // lines that may await replies now
	max       int // Config.MaxInFlight
	threshold int // above it, growth is one line per round trip
	credit    int // RECEIVED counted toward the next line beyond threshold
	// cutEnd is the stream offset written when the window was last cut: a
	// QUEUE_FULL for a line ending at or before it belongs to that cut.
	cutEnd int64

	// The round trip being timed: the line ending at probeEnd (-1: none)
	// was written at probeAt, when rows RECEIVED had been counted.
	probeEnd  int64
	probeAt   time.Time
	probeRows int
	rows      int // RECEIVED on the session
	// minRTT is the least round trip measured on the session: a standing
	// queue in the link's buffers lengthens every later one, and must not
	// raise the bound that let it build. rate is the highest rate of
	// RECEIVED over one round trip, of the last linkRounds or more.
	minRTT time.Duration
	rate   maxFilter
}

func newWindow(maxInFlight int) window {
	return window{size: min(initialWindow, maxInFlight), max: maxInFlight, threshold: maxInFlight, cutEnd: -1, probeEnd: -1}
}

// probing reports whether a round trip is being timed; while none is,
// the next line written should be (sent).
func (w *window) probing() bool { return w.probeEnd >= 0 }

// sent starts timing the round trip of the line ending at end, written
// at now.
func (w *window) sent(end int64, now time.Time) {
	w.probeEnd, w.probeAt, w.probeRows = end, now, w.rows
}

// timed reports whether the reply to the line ending at end completes
// the round trip being timed: the caller then reads the clock for
// received.
func (w *window) timed(end int64) bool { return w.probeEnd >= 0 && end >= w.probeEnd }

// bound is the most the window may grow to now.
func (w *window) bound() int {
	b := linkFloor
	if rtt, rate := w.minRTT, w.rate.get(); rtt > 0 && rate > 0 {
		b = max(b, int(math.Ceil(linkGain*rate*rtt.Seconds())))
	}
	return min(b, w.max)
}

// received records a RECEIVED for the line ending at end; limited says
// the window was full while more lines were waiting when that reply was
// read. now is read only when timed(end).
func (w *window) received(limited bool, end int64, now time.Time) {
	w.rows++
	if w.timed(end) {
		w.measure(now)
	}
	b := w.bound()
	if !limited || w.size >= b {
		return
	}
	if w.size < w.threshold {
		if w.size >= linkFloor {
			// Past the floor, the bound is measured: take it at once
			// (up to the threshold) rather than a round trip per
			// doubling, so a call of many round trips' rows does not
			// spend most of them growing.
			w.size = min(b, w.threshold)
			return
		}
		w.size++
		return
	}
	w.credit++
	if w.credit >= w.size {
		w.size++
		w.credit = 0
	}
}

// measure ends the round trip being timed at now: its time, and the rows
// RECEIVED over it per second. A window beyond the new bound is brought
// down to it.
func (w *window) measure(now time.Time) {
	w.probeEnd = -1
	d := now.Sub(w.probeAt)
	if d <= 0 {
		return
	}
	if w.minRTT == 0 || d < w.minRTT {
		w.minRTT = d
	}
	w.rate.add(float64(w.rows-w.probeRows) / d.Seconds())
	w.size = max(1, min(w.size, w.bound()))
}

// queueFull records a QUEUE_FULL or RETRY for the line ending at end,
// when the stream had been written up to handed; true when it begins a
// new episode. A refused line ends its round trip untimed: its reply
// says nothing of the rate.
func (w *window) queueFull(end, handed int64) bool {
	if w.timed(end) {
		w.probeEnd = -1
	}
	if end <= w.cutEnd {
		return false
	}
	w.threshold = max(w.size/2, 1)
	w.size = w.threshold
	w.credit = 0
	w.cutEnd = handed
	return true
}

// maxFilter is the highest of the values added over the last linkRounds
// to 2·linkRounds additions: two buckets, the older dropped when the
// newer is full.
type maxFilter struct {
	cur, prev float64
	n         int
}

func (f *maxFilter) add(v float64) {
	if f.n == linkRounds {
		f.prev, f.cur, f.n = f.cur, 0, 0
	}
	f.cur = max(f.cur, v)
	f.n++
}

func (f *maxFilter) get() float64 { return max(f.cur, f.prev) }
