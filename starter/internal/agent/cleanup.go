package agent

import "time"

// Bounds of how often a transaction is run only to delete ACKED rows past
// queue.acked-retention-ms (a tenth of the retention, within these). Any
// transaction that runs anyway also cleans up.
const (
	minCleanupInterval = time.Second
	maxCleanupInterval = time.Minute
)

// cleanupPolicy decides when a transaction deletes ACKED rows past their
// retention.
type cleanupPolicy struct {
	off   bool  // NON mode: nothing is kept once acknowledged
	acked int64 // ACKED rows as of the last commit
	last  time.Time
	more  bool // the last cleanup stopped at its batch size
}

// due says whether to clean up: in any transaction that runs anyway
// (committing), alone only now and then.
func (c *cleanupPolicy) due(now time.Time, committing bool, retention time.Duration) bool {
	if c.off || c.acked == 0 {
		return false
	}
	if committing || c.more {
		return true
	}
	every := min(max(retention/10, minCleanupInterval), maxCleanupInterval)
	return now.Sub(c.last) >= every
}

// ran notes a cleanup at now; more: it left rows to delete.
func (c *cleanupPolicy) ran(now time.Time, more bool) { c.last, c.more = now, more }
