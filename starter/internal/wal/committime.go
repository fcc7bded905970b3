package wal

import "time"

// CommitDiskTime is how long the last committed Update took to write its
// pages and its meta page to the file, each write followed by its
// fdatasync when Options.Fsync is set: the disk's share of a commit, not
// the work of building it. 0 before the first commit. Safe from any
// goroutine; with several writers it is the latest commit's.
func (w *WAL) CommitDiskTime() time.Duration { return time.Duration(w.diskTime.Load()) }
