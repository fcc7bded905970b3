// Package tracker holds every index by which the file input finds a file:
// its position key, its identity (device+inode), its path, its
// fingerprint, the content it held before a truncation (its prior), and
// the positions the last run saved that no file has claimed yet.
//
// The indexes change only through the methods of one Tracker, so they
// cannot drift apart: Add puts a file in every index, Retire takes it out
// of every index, and each setter (SetPath, SetSum, SetPrior) moves it in
// one. The caller's file type F is opaque here: the tracker keeps its own
// copy of what it indexes a file by.
//
// A Tracker is not safe for concurrent use; the goroutine that drives the
// input owns it.
package tracker
