// Package fsspace tells how much room the filesystem holding a path has,
// for the metrics that warn before the WAL's disk is full.
package fsspace

// Space is a filesystem's size and the bytes left to unprivileged writers
// (the agent's user), quotas included where the system counts them.
type Space struct {
	Avail, Size int64
}
