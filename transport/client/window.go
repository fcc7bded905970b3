package client

// initialWindow is how many batch lines a new session may have awaiting
// replies before any reply came back: the window this client always had,
// so a short link behaves as before from the first line.
const initialWindow = 64

// window is a session's congestion window: how many batch lines may await
// replies at once. One __BATCH__ carries one event, so on a long link the
// window, not the bandwidth, sets the rate (window / round-trip time).
// It grows like TCP's: by one line per RECEIVED while it was the limit
// (lines were waiting for room), doubling per round trip up to the
// threshold and by one line per round trip beyond it; QUEUE_FULL (the
// engine's queue is past its backpressure mark) and RETRY (it is full)
// halve it and set the threshold there, once per episode (the replies to
// lines already written when it was cut say the same thing again). Config's
// MaxInFlight caps it: 1 keeps the Java agent's one-at-a-time exchange.
type window struct {
	size      int // lines that may await replies now
	max       int // Config.MaxInFlight
	threshold int // above it, growth is one line per round trip
	credit    int // RECEIVED counted toward the next line beyond threshold
	// cutEnd is the stream offset written when the window was last cut: a
	// QUEUE_FULL for a line ending at or before it belongs to that cut.
	cutEnd int64
}

func newWindow(maxInFlight int) window {
	return window{size: min(initialWindow, maxInFlight), max: maxInFlight, threshold: maxInFlight, cutEnd: -1}
}

// received records a RECEIVED; limited says the window was full while
// more lines were waiting when that reply was read.
func (w *window) received(limited bool) {
	if !limited || w.size >= w.max {
		return
	}
	if w.size < w.threshold {
		w.size++
		return
	}
	w.credit++
	if w.credit >= w.size {
		w.size++
		w.credit = 0
	}
}

// queueFull records a QUEUE_FULL or RETRY for the line ending at end,
// when the stream had been written up to handed; true when it begins a
// new episode.
func (w *window) queueFull(end, handed int64) bool {
	if end <= w.cutEnd {
		return false
	}
	w.threshold = max(w.size/2, 1)
	w.size = w.threshold
	w.credit = 0
	w.cutEnd = handed
	return true
}
