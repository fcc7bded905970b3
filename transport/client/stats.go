package client

import "sync/atomic"

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
}

type counters struct {
	connectAttempts, connects, reconnects   atomic.Uint64
	sent, received, retries, queueFull, bad atomic.Uint64
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
	}
}
