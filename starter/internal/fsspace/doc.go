// Package fsspace tells how much room the filesystem holding a path has:
// for the WAL's disk reserve and the metrics that warn before it is full.
package fsspace

// Space is a filesystem's size and the bytes left to unprivileged writers
// (the agent's user), quotas included where the system counts them.
type Space struct {
	Avail, Size int64
}
