// Package process holds the operating-system side of running edge-agent as a
// daemon: the pid file, the liveness probe used by `status`, `stop` and the
// `db` write guard, the systemd readiness notification, and at start
// raising the open-files limit and setting the garbage collector's
// percentage (gc.go; GOGC in the environment wins).
//
// The running agent holds a lock on its pid file for its whole life (flock
// on unix; on Windows a LockFileEx byte-range lock placed past the pid, so
// that readers can still read it), and the lock is the only answer to "is it running": the
// kernel drops it when the process ends, whether it stopped, crashed or
// was killed, so no pid is ever guessed from /proc, and a stale file whose
// pid was reused by another program never blocks a start or makes `stop`
// signal a stranger. The pid inside the file only tells `stop` whom to
// signal. The authority on "one agent per data dir" stays the WAL's own
// lock; the pid file lets `status` and `stop` find the process.
//
// Probe semantics match the Java agent's process probe where they overlap:
// a missing pid file, or one nobody holds, means "not running"; neither is
// an error.
package process
