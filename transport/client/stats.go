package client

import (
	"sync/atomic"
	"time"
)

// Stats are cumulative counters since New.
type Stats struct {
	ConnectAttempts uint64 // dials started
	Connects        uint64 // sessions authenticated (ACK)
	Reconnects      uint64 // sessions authenticated after an earlier one was lost
	BatchesSent     uint64 // batch lines written, resends included
	Received        uint64 // RECEIVED replies
	Retries         uint64 // RETRY replies
	QueueFull       uint64 // QUEUE_FULL replies
	Failures        uint64 // batches that ended Failed
	// Barriers counts commit barriers written; Violations, sessions ended
	// because a reply could not be attributed (out of step, surplus,
	// unsolicited); Reverted, batches whose outcome such a violation took
	// back (sent again: duplicates, never losses).
	Barriers, Violations, Reverted uint64
	// Commits counts __COMMIT__ lines written by Settle; CommitLost, the
	// ids they found lost (RETRY, RESEND), sent again.
	Commits, CommitLost uint64
	// Watermark is the highest checkpoint watermark (ACK:<w>) answered.
	Watermark int64
	// Window is the congestion window (batch lines that may await
	// replies) when the last Send call left its session.
	Window int
	// LinkBound is the most the window could grow to when the last Send
	// call left its session: twice the link's measured bandwidth-delay
	// product, at least 1,024, at most MaxInFlight. A caller that hands
	// over fewer batches per call leaves the link partly idle.
	LinkBound int
	// RoundTrip is the least round trip measured on that session; 0
	// before one was.
	RoundTrip time.Duration
	// PeakInFlight is the most batch lines that awaited replies at once.
	PeakInFlight int
}

type counters struct {
	connectAttempts, connects, reconnects   atomic.Uint64
	sent, received, retries, queueFull, bad atomic.Uint64
	barriers, violations, reverted          atomic.Uint64
	commits, commitLost                     atomic.Uint64
	watermark                               atomic.Int64
	window, linkBound, peakInFlight         atomic.Int64
	roundTrip                               atomic.Int64
}

// notePeak raises PeakInFlight to n. Only the Send goroutine writes it.
func (c *counters) notePeak(n int) {
	if int64(n) > c.peakInFlight.Load() {
		c.peakInFlight.Store(int64(n))
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		ConnectAttempts: c.connectAttempts.Load(),
		Connects:        c.connects.Load(),
		Reconnects:      c.reconnects.Load(),
		BatchesSent:     c.sent.Load(),
		Received:        c.received.Load(),
		Retries:         c.retries.Load(),
		QueueFull:       c.queueFull.Load(),
		Failures:        c.bad.Load(),
		Barriers:        c.barriers.Load(),
		Violations:      c.violations.Load(),
		Reverted:        c.reverted.Load(),
		Commits:         c.commits.Load(),
		CommitLost:      c.commitLost.Load(),
		Watermark:       c.watermark.Load(),
		Window:          int(c.window.Load()),
		LinkBound:       int(c.linkBound.Load()),
		RoundTrip:       time.Duration(c.roundTrip.Load()),
		PeakInFlight:    int(c.peakInFlight.Load()),
	}
}
