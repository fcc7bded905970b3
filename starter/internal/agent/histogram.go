package agent

import (
	"slices"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds of the send-latency histogram, from
// a loopback round trip to a Send held up by a slow engine.
var latencyBuckets = [...]time.Duration{
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// fsyncBuckets are the upper bounds of the WAL's commit disk time
// histogram, from an SSD's fsync to a slow SD card's worst.
var fsyncBuckets = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond,
}

// maxBuckets is the most buckets a histogram has.
const maxBuckets = 16

// Histogram is a cumulative latency histogram, as Prometheus exposes it.
type Histogram struct {
	// Bounds are the buckets' upper bounds; Counts[i] is the number of
	// observations <= Bounds[i] (cumulative).
	Bounds []time.Duration
	Counts []uint64
	Count  uint64
	Sum    time.Duration
}

// histogram is written by the sender alone and read by Snapshot: plain
// atomics, no lock on the send path. A reader may see an observation in
// a bucket before it is in Count; the next scrape is consistent again.
type histogram struct {
	// bounds are the buckets' upper bounds; nil is latencyBuckets. Set
	// before the first observation.
	bounds  []time.Duration
	buckets [maxBuckets]atomic.Uint64 // per bucket, not cumulative
	count   atomic.Uint64
	sum     atomic.Int64 // nanoseconds
}

func (h *histogram) bucketBounds() []time.Duration {
	if h.bounds == nil {
		return latencyBuckets[:]
	}
	return h.bounds
}

func (h *histogram) observe(d time.Duration) {
	for i, b := range h.bucketBounds() {
		if d <= b {
			h.buckets[i].Add(1)
			break
		}
	}
	h.sum.Add(int64(d))
	h.count.Add(1)
}

func (h *histogram) snapshot() Histogram {
	bounds := h.bucketBounds()
	out := Histogram{
		Bounds: slices.Clone(bounds),
		Counts: make([]uint64, len(bounds)),
		Count:  h.count.Load(),
		Sum:    time.Duration(h.sum.Load()),
	}
	var cum uint64
	for i := range bounds {
		cum += h.buckets[i].Load()
		out.Counts[i] = cum
	}
	return out
}
