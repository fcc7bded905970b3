package wal

import "time"

// CommitDiskTime is how long the last committed Update took to write its
// pages and its meta page to the file, each write followed by its
// fdatasync when Options.Fsync is set: the disk's share of a commit, not
// the work of building it. 0 before the first commit. Safe from any
// goroutine; with several writers it is the latest commit's.
func (w *WAL) CommitDiskTime() time.Duration { return time.Duration(w.diskTime.Load()) }

// SetDecodedCacheExtra lets the cache of decoded blocks hold extra bytes
// (at least 0) past its own bound: an agent whose commit groups grew on a
// slow disk appends more than that bound ahead of its claims, which then
// decode every block the append encoded. Safe from any goroutine; takes
// effect at the next write transaction's appends.
func (w *WAL) SetDecodedCacheExtra(extra int) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.cache.extra = max(extra, 0)
}
