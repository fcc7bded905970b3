package client

import (
	"fmt"
	"testing"
	"time"
)

// link is a simulated path to an engine: each line's reply comes back a
// round trip after it was written, and no sooner than 1/rate after the
// reply before it (rate 0: no bandwidth limit). Time is simulated: the
// test reads no clock.
type link struct {
	rtt  time.Duration
	rate float64 // rows per second; 0: unlimited
}

// drive has w send lines over l as the pump does: the window filled
// whenever a reply frees room, the newest line timed if no round trip is,
// every reply fed back in order. It
// returns the most lines that were in flight at once.
func (l link) drive(w *window, lines int) (peak int) {
	now := time.Unix(0, 0)
	var due []time.Time // replies owed, oldest first
	var ends []int64
	var last time.Time
	sent := 0
	for len(due) > 0 || sent < lines {
		wrote := false
		for len(due) < w.size && sent < lines {
			wrote = true
			sent++
			end := int64(sent)
			at := now.Add(l.rtt)
			if l.rate > 0 {
				if gap := last.Add(time.Duration(float64(time.Second) / l.rate)); gap.After(at) {
					at = gap
				}
			}
			last = at
			due, ends = append(due, at), append(ends, end)
		}
		if wrote && !w.probing() {
			w.sent(ends[len(ends)-1], now) // as the pump does before it waits
		}
		peak = max(peak, len(due))
		limited := len(due) >= w.size && sent < lines
		now = due[0]
		w.received(limited, ends[0], now)
		due, ends = due[1:], ends[1:]
	}
	return peak
}

// The window grows to the link bound, twice the bandwidth-delay product
// (within 5 %: the least round trip measured includes the time a burst
// of lines takes on the link), and no further; MaxInFlight caps it; a
// link too short to measure keeps the floor; a link whose round trip is
// the only limit grows to the cap.
func TestWindowFollowsTheLink(t *testing.T) {
	tests := []struct {
		rtt   time.Duration
		rate  float64 // 0: the round trip is the only limit
		max   int
		lines int
	}{
		{100 * time.Millisecond, 20_000, 32768, 100_000},    // BDP 2,000
		{100 * time.Millisecond, 50_000, 32768, 200_000},    // BDP 5,000
		{100 * time.Millisecond, 150_000, 65536, 1_000_000}, // BDP 15,000
		{600 * time.Millisecond, 20_000, 65536, 300_000},    // BDP 12,000
		{600 * time.Millisecond, 50_000, 65536, 800_000},    // BDP 30,000
		{600 * time.Millisecond, 50_000, 16384, 300_000},    // the cap holds
		{20 * time.Millisecond, 200_000, 32768, 200_000},    // BDP 4,000
		{100 * time.Millisecond, 0, 32768, 300_000},         // round trip only: up to the cap
		{200 * time.Microsecond, 1_000_000, 32768, 100_000}, // BDP 200: the floor
		{600 * time.Millisecond, 400, 32768, 20_000},        // BDP 240: the floor
		{100 * time.Millisecond, 20_000, 1, 1000},           // the Java agent's exchange
		{100 * time.Millisecond, 20_000, 512, 10_000},       // below the floor: the cap
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("rtt=%v,rate=%v,max=%d", tt.rtt, tt.rate, tt.max), func(t *testing.T) {
			bdp := tt.rate * tt.rtt.Seconds()
			lo, hi := tt.max, tt.max
			if tt.rate > 0 {
				lo = min(tt.max, max(linkFloor, int(bdp)))
				hi = min(tt.max, max(linkFloor, int(linkGain*bdp*1.05)))
			}
			w := newWindow(tt.max)
			peak := link{rtt: tt.rtt, rate: tt.rate}.drive(&w, tt.lines)
			if w.size < lo || w.size > hi {
				t.Fatalf("window %d, want %d..%d (bound %d, least round trip %v, rate %.0f/s)",
					w.size, lo, hi, w.bound(), w.minRTT, w.rate.get())
			}
			if peak > hi {
				t.Fatalf("%d lines in flight at once, want at most %d", peak, hi)
			}
		})
	}
}

// QUEUE_FULL halves a window grown on a long link, and it grows back no
// further than the link bound.
func TestWindowQueueFullOnALongLink(t *testing.T) {
	l := link{rtt: 100 * time.Millisecond, rate: 50_000}
	w := newWindow(32768)
	l.drive(&w, 200_000)
	grown := w.size
	if grown < 5000 {
		t.Fatalf("window %d before QUEUE_FULL, want at least the BDP 5000", grown)
	}
	if !w.queueFull(1<<40, 1<<40) || w.size != grown/2 {
		t.Fatalf("window %d after QUEUE_FULL, want %d", w.size, grown/2)
	}
	l.drive(&w, 400_000)
	if w.size <= grown/2 || w.size > w.bound() || w.bound() > 10500 {
		t.Fatalf("window %d after growing back, want above %d and at most the bound %d (at most 10500)", w.size, grown/2, w.bound())
	}
}

// A link that slows is known again within 2·linkRounds round trips: the
// window comes down to the new bound.
func TestWindowFollowsASlowerLink(t *testing.T) {
	w := newWindow(65536)
	link{rtt: 100 * time.Millisecond, rate: 100_000}.drive(&w, 400_000)
	if w.size < 10000 {
		t.Fatalf("window %d on the fast link, want at least its BDP 10000", w.size)
	}
	link{rtt: 100 * time.Millisecond, rate: 10_000}.drive(&w, 800_000)
	if w.size > 2050 && w.size > linkFloor {
		t.Fatalf("window %d after the link slowed to a BDP of 1000, want at most %d", w.size, max(2050, linkFloor))
	}
}
