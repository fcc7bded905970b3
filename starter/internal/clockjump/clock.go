package clockjump

import (
	"strconv"
	"time"
)

// Threshold is the change of wall minus monotonic that counts as a jump.
const Threshold = 2 * time.Second

// Clock reads the wall clock and a monotonic clock counting from boot.
type Clock interface {
	Wall() time.Time
	// SinceBoot is monotonic; it restarts at a boot only.
	SinceBoot() time.Duration
	// Boot names the current boot: a new value after each.
	Boot() string
}

// processClock stands in where the system has no boot clock: the
// process's own monotonic clock, one "boot" per process.
type processClock struct {
	start time.Time
	boot  string
}

func newProcessClock() *processClock {
	now := time.Now()
	return &processClock{start: now, boot: "process-" + strconv.FormatInt(now.UnixNano(), 36)}
}

func (c *processClock) Wall() time.Time          { return time.Now() }
func (c *processClock) SinceBoot() time.Duration { return time.Since(c.start) }
func (c *processClock) Boot() string             { return c.boot }
