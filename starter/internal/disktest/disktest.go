// Package disktest gives tests a small disk they can fill: a tmpfs of a
// few MiB mounted under the test's temp dir, and a ballast file that takes
// its last free byte. The full-disk tests of the WAL, the scheduler and
// the pid file use it. Mounting needs Linux and root; elsewhere, or
// without root, the test is skipped with the reason.
package disktest

import "testing"

// Small mounts a tmpfs of size bytes under tb.TempDir and returns its
// path; it is unmounted when the test ends.
func Small(tb testing.TB, size int) string {
	tb.Helper()
	return small(tb, size)
}

// Fill writes a ballast file in dir until the filesystem is full and
// returns its path; removing it frees the space again.
func Fill(tb testing.TB, dir string) string {
	tb.Helper()
	return fill(tb, dir)
}
