//go:build !linux

package clockjump

// System is the process's own monotonic clock, one "boot" per process:
// rows stored before a restart are not repaired.
func System() Clock { return newProcessClock() }
